"""The Dify SDK's test driver (PluginRunner), message and model types, imported without gevent's monkey-patching.

`import dify_plugin` runs `gevent.monkey.patch_all(sys=True)` as its first side effect: right for a plugin process,
wrong for a test or benchmark process. Patched there, every thread becomes a greenlet, a blocking read stalls the
whole process, and weaviate-client's gRPC runs under a hub it was not initialised for. PluginRunner and the entity
modules need none of it (PluginRunner uses plain threads, pipes and select), so this module registers the
`dify_plugin` package without executing its `__init__` and imports only those submodules. The plugin processes the
runtimes start still import `dify_plugin` normally and are patched as Dify runs them.
"""

from __future__ import annotations

import importlib.util
import sys
import types
import warnings


def _register_package_without_init() -> None:
    if "dify_plugin" in sys.modules:
        return  # imported already (normally or by us): nothing to avoid any more
    spec = importlib.util.find_spec("dify_plugin")
    if spec is None or spec.submodule_search_locations is None:
        raise ImportError("dify_plugin is not installed: run `make setup`")
    package = types.ModuleType("dify_plugin")
    package.__path__ = list(spec.submodule_search_locations)
    package.__spec__ = spec
    sys.modules["dify_plugin"] = package


_register_package_without_init()

# dify_plugin's entity models use pydantic's deprecated class-based config; pydantic warns once per import. In a
# plugin process that warning stays hidden (not __main__); here it would reach every test summary. Not ours to fix.
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="Support for class-based `config` is deprecated")
    from dify_plugin.config.integration_config import IntegrationConfig
    from dify_plugin.core.entities.plugin.request import (
        PluginInvokeType,
        ToolActions,
        ToolInvokeRequest,
        ToolValidateCredentialsRequest,
    )
    from dify_plugin.entities.model.llm import LLMModelConfig, LLMResult, LLMResultChunk, LLMUsage
    from dify_plugin.entities.model.message import (
        AssistantPromptMessage,
        PromptMessageRole,
        SystemPromptMessage,
        TextPromptMessageContent,
        UserPromptMessage,
    )
    from dify_plugin.entities.model.rerank import RerankDocument, RerankModelConfig, RerankResult
    from dify_plugin.entities.tool import ToolInvokeMessage
    from dify_plugin.integration.run import PluginRunner

__all__ = [
    "AssistantPromptMessage",
    "IntegrationConfig",
    "LLMModelConfig",
    "LLMResult",
    "LLMResultChunk",
    "LLMUsage",
    "PluginInvokeType",
    "PluginRunner",
    "PromptMessageRole",
    "RerankDocument",
    "RerankModelConfig",
    "RerankResult",
    "SystemPromptMessage",
    "TextPromptMessageContent",
    "ToolActions",
    "ToolInvokeMessage",
    "ToolInvokeRequest",
    "ToolValidateCredentialsRequest",
    "UserPromptMessage",
]
