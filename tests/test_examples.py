"""The example chatflow, checked against Dify itself:

- Dify's workflow engine (graphon) loads it: every node validated by Dify's node classes, every plugin resolved from
  the DSL's dependencies, the graph built and validated;
- it is in the current DSL version and pins the package this commit builds;
- each tool node names a real tool and only its parameters;
- every variable a node reads is an output its source node has at run time. For a tool node that is what Dify's
  tool node emits (`text`, `files`, `json`) plus the variables the plugin really sends, taken from the plugin run by
  PluginRunner, on success and on failure alike: a workflow must not break when a call fails.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from graphon.dsl import DslError
from graphon.graph.graph import Graph

from hindsight_insights.weaviate_server import LocalWeaviate
from scripts.package_plugin import CHATFLOW, ROOT, unique_identifier
from testkit import chatflow
from testkit.messages import credentials_for
from testkit.runner import RunnerPlugin

pytestmark = pytest.mark.runtime  # version-agnostic: run once, on the default Weaviate (Makefile)

REFERENCE = re.compile(r"\{\{#([\w.]+)#\}\}")
# Dify's system variables of a chatflow (api/core/workflow/system_variable.py).
SYSTEM_VARIABLES = {"query", "files", "conversation_id", "user_id", "dialogue_count", "app_id", "workflow_id"}
# What graphon's node classes put in their run result (nodes/tool/tool_node.py, nodes/llm/node.py).
TOOL_NODE_OUTPUTS = {"text", "files", "json"}
LLM_NODE_OUTPUTS = {"text", "reasoning_content", "usage", "finish_reason"}
# A call of each tool that succeeds and one that fails.
CALLS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "search_insight": ({"query": "退货寄到哪里"}, {"query": ""}),
    "record_turn": ({"session_id": "s-1", "user_message": "不对"}, {"session_id": "s-1", "feedback": "meh"}),
    "save_insight": ({"insight_json": "{}"}, {"insight_json": "{not json"}),
}
DSL = CHATFLOW.read_text()


def plugin_tools() -> dict[str, Any]:
    manifest = yaml.safe_load((ROOT / "manifest.yaml").read_text())
    (provider_file,) = manifest["plugins"]["tools"]
    provider = yaml.safe_load((ROOT / provider_file).read_text())
    tools = [yaml.safe_load((ROOT / path).read_text()) for path in provider["tools"]]
    return {
        "provider_id": f"{manifest['author']}/{manifest['name']}/{provider['identity']['name']}",
        **{tool["identity"]["name"]: tool for tool in tools},
    }


def nodes() -> dict[str, dict[str, Any]]:
    graph = yaml.safe_load(DSL)["workflow"]["graph"]
    return {node["id"]: node["data"] for node in graph["nodes"]}


def references(value: Any) -> list[tuple[str, str]]:
    """Every (node, variable) a node reads: `{{#node.variable#}}` in text, and [node, variable] selectors."""
    found = [tuple(ref.split(".", 1)) for ref in REFERENCE.findall(yaml.safe_dump(value, allow_unicode=True))]

    def selectors(item: Any) -> None:
        if isinstance(item, dict):
            for key, inner in item.items():
                if key in ("variable_selector", "value_selector") and isinstance(inner, list) and len(inner) == 2:
                    found.append((inner[0], inner[1]))
                else:
                    selectors(inner)
        elif isinstance(item, list):
            for inner in item:
                selectors(inner)

    selectors(value)
    return [(str(node), str(variable)) for node, variable in found]


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Graph:
    return chatflow.load(DSL, tmp_path_factory.mktemp("graphon"))


@pytest.fixture(scope="module")
def emitted(runner: RunnerPlugin, weaviate_server: LocalWeaviate) -> dict[str, set[str]]:
    """The variables each tool really emits, on success and on failure alike (their intersection)."""
    credentials = credentials_for(
        weaviate_server.url, weaviate_server.grpc_port, f"dsl-{uuid.uuid4().hex[:8]}", weaviate_server.api_key
    )
    variables = {}
    for tool, (succeeds, fails) in CALLS.items():
        ok = runner.invoke_tool(tool, succeeds, credentials)
        failed = runner.invoke_tool(tool, fails, credentials)
        assert "error" not in ok.json and "error" in failed.json, tool  # the calls do what they are for
        variables[tool] = set(ok.variables) & set(failed.variables)
    return variables


def test_dify_loads_it_into_its_workflow_engine(graph: Graph) -> None:
    classes = {node_id: type(node).__name__ for node_id, node in graph.nodes.items()}
    types = {node_id: data["type"] for node_id, data in nodes().items()}
    expected = {
        "start": "StartNode",
        "tool": "ToolNode",
        "llm": "LLMNode",
        "answer": "AnswerNode",
        "if-else": "IfElseNode",
    }
    assert classes == {node_id: expected[kind] for node_id, kind in types.items()}
    assert graph.root_node.id == next(i for i, kind in types.items() if kind == "start")
    assert len(graph.edges) == len(yaml.safe_load(DSL)["workflow"]["graph"]["edges"])


def test_broken_dsl_is_refused_by_the_engine(tmp_path: Path) -> None:
    """The check above can fail: a tool without its plugin dependency does not load."""
    document = yaml.safe_load(DSL)
    document["dependencies"] = [d for d in document["dependencies"] if d["type"] != "package"]
    with pytest.raises(DslError, match="dependency could not be resolved"):
        chatflow.load(yaml.safe_dump(document, allow_unicode=True), tmp_path)


def test_current_dsl_version_and_app_mode() -> None:
    document = yaml.safe_load(DSL)
    # Dify's api/constants/dsl_version.py: CURRENT_APP_DSL_VERSION = "0.6.0"; a string, as Dify's importer requires.
    assert document["version"] == "0.6.0" and document["kind"] == "app"
    assert document["app"]["mode"] == "advanced-chat"
    assert chatflow.plan(DSL).loadable


def test_dependencies_offer_every_plugin(plugin_package: Path) -> None:
    """Dify's PluginDependency: type marketplace (marketplace_plugin_unique_identifier) or package
    (plugin_unique_identifier); on import Dify offers to install those missing from the workspace.

    The package dependency names this plugin at the manifest's version. Its checksum is that of the build it was
    pinned to (`make pin-chatflow`, at release): a builder imports the chatflow beside whichever build they
    installed, so the test does not demand that every commit re-pin it."""
    document = yaml.safe_load(DSL)
    by_type = {d["type"]: d["value"] for d in document["dependencies"]}
    assert set(by_type) == {"marketplace", "package"}
    pinned = by_type["package"]["plugin_unique_identifier"]
    this_build = unique_identifier(plugin_package)
    assert pinned.split("@")[0] == this_build.split("@")[0]  # author/name:version
    assert re.fullmatch(r"[0-9a-f]{64}", pinned.split("@")[1]), pinned
    assert by_type["package"]["version"] == yaml.safe_load((ROOT / "manifest.yaml").read_text())["version"]
    assert by_type["marketplace"]["marketplace_plugin_unique_identifier"].startswith("langgenius/openai:")
    planned = {d.plugin_unique_identifier for d in chatflow.plan(DSL).dependencies}  # as Dify's importer reads them
    assert planned == {
        by_type["package"]["plugin_unique_identifier"],
        by_type["marketplace"]["marketplace_plugin_unique_identifier"],
    }


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


def test_every_variable_read_is_an_output_at_run_time(emitted: dict[str, set[str]]) -> None:
    graph = nodes()
    read = [(reader, node_id, variable) for reader, data in graph.items() for node_id, variable in references(data)]
    assert read, "the chatflow reads no variables?"
    for reader, node_id, variable in read:
        where = f"node {reader} reads {node_id}.{variable}"
        if node_id == "sys":
            assert variable in SYSTEM_VARIABLES, where
            continue
        source = graph[node_id]
        if source["type"] == "start":
            assert variable in {v["variable"] for v in source["variables"]}, where
        elif source["type"] == "llm":
            assert variable in LLM_NODE_OUTPUTS, where
        elif source["type"] == "tool":
            assert variable in TOOL_NODE_OUTPUTS | emitted[source["tool_name"]], where
        else:
            pytest.fail(f"{where}: the test knows no outputs of a {source['type']} node")


def test_search_insight_emits_its_variables_even_when_it_fails(emitted: dict[str, set[str]]) -> None:
    assert emitted["search_insight"] == {"rules", "injected_ids"}


def test_rules_reach_the_system_prompt_and_reflection_reaches_save_insight() -> None:
    graph = nodes()
    search_id = next(i for i, d in graph.items() if d.get("tool_name") == "search_insight")
    answer_llm = next(d for d in graph.values() if d["type"] == "llm" and "rules" in str(d["prompt_template"]))
    assert f"{{{{#{search_id}.rules#}}}}" in answer_llm["prompt_template"][0]["text"]
    save = next(d for d in graph.values() if d.get("tool_name") == "save_insight")
    reflect_id = REFERENCE.findall(save["tool_parameters"]["insight_json"]["value"])[0].split(".")[0]
    assert graph[reflect_id]["type"] == "llm" and "{}" in graph[reflect_id]["prompt_template"][0]["text"]
    record_id = next(i for i, d in graph.items() if d.get("tool_name") == "record_turn")
    branch = next(d for d in graph.values() if d["type"] == "if-else")
    (condition,) = branch["cases"][0]["conditions"]  # the detector's verdict, not keywords of the chatflow's own
    assert condition["variable_selector"] == [record_id, "correction_type"]
    assert (condition["comparison_operator"], condition["value"]) == ("is not", "none")
