"""Validates the credentials by connecting: reachable, key accepted, Weaviate 1.27+, collections in place."""

from typing import Any

from dify_plugin import ToolProvider
from dify_plugin.errors.tool import ToolProviderCredentialValidationError

import hindsight_dify
from hindsight_insights.errors import HindsightError


class HindsightInsightsProvider(ToolProvider):
    def _validate_credentials(self, credentials: dict[str, Any]) -> None:
        try:
            hindsight_dify.validate(credentials)
        except HindsightError as error:
            raise ToolProviderCredentialValidationError(str(error)) from None
