"""The Dify plugin's entry point: the daemon runs `python -m main` in the plugin directory."""

from dify_plugin import DifyPluginEnv, Plugin

plugin = Plugin(DifyPluginEnv(MAX_REQUEST_TIMEOUT=120))

if __name__ == "__main__":
    plugin.run()
