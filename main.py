"""The Dify plugin's entry point: the daemon runs `python -m main` in the plugin directory."""

from dify_plugin import DifyPluginEnv, Plugin

from hindsight_insights.quiet import quiet_dependency_warnings

quiet_dependency_warnings()  # before Plugin() imports the tools, and with them weaviate-client
plugin = Plugin(DifyPluginEnv(MAX_REQUEST_TIMEOUT=120))

if __name__ == "__main__":
    plugin.run()
