from collections.abc import Generator
from typing import Any

from dify_plugin import Tool
from dify_plugin.entities.model.llm import LLMModelConfig
from dify_plugin.entities.model.message import SystemPromptMessage, UserPromptMessage
from dify_plugin.entities.tool import ToolInvokeMessage

MODEL = LLMModelConfig(provider="langgenius/openai/openai", model="gpt-4o-mini", mode="chat", completion_params={})


class AskLLMTool(Tool):
    def _invoke(self, tool_parameters: dict[str, Any]) -> Generator[ToolInvokeMessage]:
        messages = [
            SystemPromptMessage(content="Answer in one short sentence."),
            UserPromptMessage(content=str(tool_parameters["question"])),
        ]
        if tool_parameters.get("stream"):
            chunks = self.session.model.llm.invoke(model_config=MODEL, prompt_messages=messages, stream=True)
            text = "".join(str(chunk.delta.message.content or "") for chunk in chunks)
            yield self.create_json_message({"text": text, "stream": True})
        else:
            result = self.session.model.llm.invoke(model_config=MODEL, prompt_messages=messages, stream=False)
            usage = result.usage.model_dump(mode="json") if result.usage else None
            yield self.create_json_message({"text": result.message.content, "stream": False, "usage": usage})
