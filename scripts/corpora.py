"""The training corpora's files, read one way by every trainer: the evaluation sets retired beside a corpus, and the
correction detector's messages (its hand-written corpus, then the sets retired into it), which the detector trains
on and the screen reads for the users' own wishes."""

from __future__ import annotations

import json
from pathlib import Path

Row = dict[str, str]


def retired_sets(folder: Path | None) -> list[Path]:
    return sorted(folder.glob("*.json")) if folder is not None else []


def correction_rows(path: Path, retired: Path | None) -> list[Row]:
    """The correction corpus's rows, then the retired sets' items in the corpus's shape."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for source in retired_sets(retired):
        rows += [
            {
                "id": f"{source.stem}:{item['id']}",
                "label": item["type"],
                "lang": item["lang"],
                "style": "retired",
                "previous_assistant": item.get("previous_assistant") or "",
                "message": item["message"],
            }
            for item in json.loads(source.read_text(encoding="utf-8"))["items"]
        ]
    return rows
