"""Support code shared by the tests and the benchmarks: the runtimes that run the plugin, and what they need.

Not part of the plugin package (.difyignore).
"""
