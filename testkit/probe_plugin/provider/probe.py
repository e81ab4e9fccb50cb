from typing import Any

from dify_plugin import ToolProvider


class ProbeProvider(ToolProvider):
    def _validate_credentials(self, credentials: dict[str, Any]) -> None:
        pass  # no credentials: the model is the workspace's
