"""Prompts are data: jinja2 templates under prompts/, all rendered by `render_prompt` (as are the report's and the
review console's pages: templates named *.html.j2 or *.svg.j2 are HTML-escaped)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import jinja2


@functools.cache
def _environment(prompts_dir: Path) -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(prompts_dir),
        undefined=jinja2.StrictUndefined,  # a missing variable is a bug, not an empty string
        # Prompts are plain text; the pages (the daily report, the review console) escape everything they show.
        autoescape=jinja2.select_autoescape(enabled_extensions=("html.j2", "svg.j2"), default=False),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
    )


def render_prompt(prompts_dir: Path, name: str, **context: Any) -> str:
    return _environment(prompts_dir.resolve()).get_template(name).render(**context)
