"""The operator's command line: inspect what an agent told a user, work the review queue, run the demo.

python -m hindsight_cli --help
"""
