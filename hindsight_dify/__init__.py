"""The Dify adapter: what the plugin's provider and tools call. It imports the core's public names only, and never
`dify_plugin` itself (the tools hand in their Tool object)."""

from hindsight_dify.credentials import ProviderCredentials, credentials_for
from hindsight_dify.operations import OPERATIONS, Context
from hindsight_dify.results import ToolResult, error_result
from hindsight_dify.runtime import STORES, StoreCache, cache_key, invoke, off_event_loop, run, validate

__all__ = [
    "OPERATIONS",
    "STORES",
    "Context",
    "ProviderCredentials",
    "StoreCache",
    "ToolResult",
    "cache_key",
    "credentials_for",
    "error_result",
    "invoke",
    "off_event_loop",
    "run",
    "validate",
]
