"""The Dify plugin's entry point: the daemon runs `python -m main` in the plugin directory."""

import logging

from dify_plugin import DifyPluginEnv, Plugin
from dify_plugin.config.logger_format import plugin_logger_handler

from hindsight_dify.stdio import repair_request_lines
from hindsight_insights.quiet import quiet_dependency_warnings

quiet_dependency_warnings()  # before Plugin() imports the tools, and with them weaviate-client
# Our modules log through the SDK's handler, as log events on the protocol channel that the daemon records as this
# plugin's log. Without a handler, a warning (a malformed reflection answer, an undo step) would fall through to
# Python's last-resort handler and land on stderr.
for package in ("hindsight_insights", "hindsight_dify"):
    logger = logging.getLogger(package)
    logger.addHandler(plugin_logger_handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
plugin = Plugin(DifyPluginEnv(MAX_REQUEST_TIMEOUT=120))
repair_request_lines()  # a request line with a lone surrogate gets an answer instead of none (hindsight_dify/stdio.py)

if __name__ == "__main__":
    plugin.run()
