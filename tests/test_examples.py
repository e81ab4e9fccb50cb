"""The example chatflow matches the plugin: every tool node names a real tool and only its parameters."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
CHATFLOW = ROOT / "examples" / "hindsight_chatflow.yml"
REFERENCE = re.compile(r"\{\{#([\w.]+)#\}\}")
SYSTEM_VARIABLES = {"query", "user_id", "conversation_id", "files", "dialogue_count", "app_id", "workflow_id"}


def plugin_tools() -> dict[str, dict[str, Any]]:
    manifest = yaml.safe_load((ROOT / "manifest.yaml").read_text())
    (provider_file,) = manifest["plugins"]["tools"]
    provider = yaml.safe_load((ROOT / provider_file).read_text())
    tools = [yaml.safe_load((ROOT / path).read_text()) for path in provider["tools"]]
    return {
        "provider_id": f"{manifest['author']}/{manifest['name']}/{provider['identity']['name']}",
        **{tool["identity"]["name"]: tool for tool in tools},
    }


def nodes() -> dict[str, dict[str, Any]]:
    graph = yaml.safe_load(CHATFLOW.read_text())["workflow"]["graph"]
    return {node["id"]: node["data"] for node in graph["nodes"]}


def references(value: Any) -> list[str]:
    return REFERENCE.findall(yaml.safe_dump(value, allow_unicode=True))


def test_tool_nodes_match_the_plugin() -> None:
    tools = plugin_tools()
    tool_nodes = [data for data in nodes().values() if data["type"] == "tool"]
    assert sorted(data["tool_name"] for data in tool_nodes) == ["record_turn", "save_insight", "search_insight"]
    for data in tool_nodes:
        assert data["provider_id"] == tools["provider_id"] and data["provider_type"] == "builtin"
        tool = tools[data["tool_name"]]
        declared = {p["name"]: p for p in tool["parameters"]}
        for name in data["tool_parameters"]:
            assert name in declared, f"{data['tool_name']} has no parameter {name}"
            assert declared[name]["form"] == "llm", f"{name} is wired to a variable, so it must be form: llm"
        for name, setting in data["tool_configurations"].items():
            assert declared[name]["form"] == "form" and setting["type"] == "constant"
        required = {name for name, p in declared.items() if p.get("required")}
        assert required <= set(data["tool_parameters"]) | set(data["tool_configurations"]), data["tool_name"]


def test_every_variable_reference_resolves() -> None:
    graph = nodes()
    tools = plugin_tools()
    for data in graph.values():
        for reference in references(data):
            node_id, variable = reference.split(".", 1)
            if node_id == "sys":
                assert variable in SYSTEM_VARIABLES
                continue
            source = graph[node_id]
            if source["type"] == "start":
                assert variable in {v["variable"] for v in source["variables"]}
            elif source["type"] == "llm":
                assert variable == "text"
            elif source["type"] == "tool":
                outputs = {"text", "json", "files", *tools[source["tool_name"]]["output_schema"]["properties"]}
                assert variable in outputs, f"{source['tool_name']} has no output {variable}"


def test_rules_reach_the_system_prompt_and_reflection_reaches_save_insight() -> None:
    graph = nodes()
    search_id = next(i for i, d in graph.items() if d.get("tool_name") == "search_insight")
    answer_llm = next(d for d in graph.values() if d["type"] == "llm" and "rules" in str(d["prompt_template"]))
    assert f"{{{{#{search_id}.rules#}}}}" in answer_llm["prompt_template"][0]["text"]
    save = next(d for d in graph.values() if d.get("tool_name") == "save_insight")
    reflect_id = references(save["tool_parameters"]["insight_json"])[0].split(".")[0]
    assert graph[reflect_id]["type"] == "llm" and "{}" in graph[reflect_id]["prompt_template"][0]["text"]
    branch = next(d for d in graph.values() if d["type"] == "if-else")
    assert branch["cases"][0]["conditions"]
