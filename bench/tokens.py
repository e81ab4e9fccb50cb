"""Qwen's tokenizer, offline: the BPE ranks the DashScope SDK ships (dashscope/resources/qwen.tiktoken), read with
tiktoken and Qwen's own split pattern. Counts the tokens a Qwen model (the OpenAI-compatible path) is billed for;
Claude's tokenizer is not published, so for Claude these counts are an estimate.

Needs the `tokens` dependency group (scripts/bootstrap.sh installs it).
"""

from __future__ import annotations

import base64
import importlib.util
from functools import cache
from pathlib import Path

import tiktoken

# Qwen's pre-tokenizer pattern (the Qwen tokenizer's PAT_STR).
_QWEN_SPLIT = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"""
    r"""\s*[\r\n]+|\s+(?!\S)|\s+"""
)


@cache
def qwen_encoding() -> tiktoken.Encoding:
    spec = importlib.util.find_spec("dashscope")  # located, not imported: the SDK itself is not needed
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("Qwen's tokenizer needs the `tokens` dependency group: run scripts/bootstrap.sh")
    ranks_file = Path(next(iter(spec.submodule_search_locations))) / "resources" / "qwen.tiktoken"
    ranks = {
        base64.b64decode(token): int(rank)
        for token, rank in (line.split() for line in ranks_file.read_bytes().splitlines() if line)
    }
    return tiktoken.Encoding("qwen", pat_str=_QWEN_SPLIT, mergeable_ranks=ranks, special_tokens={})


def qwen_tokens(text: str) -> int:
    return len(qwen_encoding().encode(text, disallowed_special=()))
