"""The plugin page in Dify: readme/README.md (English, the package's README.md) and readme/README_zh_Hans.md must
stay in step: the same sections, the same tools and identifiers, every credential field under its label."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from scripts.package_plugin import BUILDER_README, ROOT

ENGLISH = (ROOT / BUILDER_README).read_text()
CHINESE = (ROOT / "readme" / "README_zh_Hans.md").read_text()
CODE = re.compile(r"`([^`]+)`")
TOOLS = ["save_insight", "search_insight", "record_turn", "forget_user", "reflect_session"]


def sections(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("## ")]


def first_mentions(text: str, names: list[str]) -> list[str]:
    return sorted(names, key=text.index)


def provider() -> dict[str, object]:
    return yaml.safe_load((ROOT / "provider" / "hindsight_insights.yaml").read_text())  # type: ignore[no-any-return]


def test_same_number_of_sections_in_the_same_places() -> None:
    assert len(sections(ENGLISH)) == len(sections(CHINESE)) >= 5
    # Each section holds the same identifiers, section by section.
    english, chinese = (re.split(r"^## .*$", text, flags=re.M) for text in (ENGLISH, CHINESE))
    assert [set(CODE.findall(part)) for part in english] == [set(CODE.findall(part)) for part in chinese]


def test_same_tools_in_the_same_order() -> None:
    assert all(f"`{tool}`" in ENGLISH and f"`{tool}`" in CHINESE for tool in TOOLS)
    assert first_mentions(ENGLISH, TOOLS) == first_mentions(CHINESE, TOOLS) == TOOLS
    declared = yaml.safe_load((ROOT / "provider" / "hindsight_insights.yaml").read_text())["tools"]
    assert [Path(path).stem for path in declared] == TOOLS  # and they are the plugin's tools


def test_every_credential_field_under_its_label() -> None:
    fields = provider()["credentials_for_provider"]
    assert isinstance(fields, dict)
    for name, field in fields.items():
        assert field["label"]["en_US"] in ENGLISH, name
        assert field["label"]["zh_Hans"] in CHINESE, name


def test_chinese_page_is_written_in_chinese() -> None:
    prose = CODE.sub("", CHINESE)
    cjk = sum("\u4e00" <= char <= "\u9fff" for char in prose)
    latin = sum(char.isascii() and char.isalpha() for char in prose)
    assert cjk > 2 * latin, (cjk, latin)
    assert CHINESE.startswith("# Hindsight 经验记忆")  # the plugin's Chinese label


def test_english_page_is_the_builders_not_the_developers() -> None:
    assert ENGLISH.startswith("# Hindsight Insights")
    for developer_only in ("make test", "HINDSIGHT_", "mypy", "pytest"):
        assert developer_only not in ENGLISH and developer_only not in CHINESE, developer_only
