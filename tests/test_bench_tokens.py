"""The offline Qwen tokenizer that bench/bench_worker.py counts prompt tokens with."""

from __future__ import annotations

from bench.tokens import qwen_encoding, qwen_tokens


def test_qwen_tokens_round_trip_and_count_words_not_characters() -> None:
    text = "不对，退货地址是杭州市滨江区。Returns go to Binjiang, not Xihu."
    encoding = qwen_encoding()
    assert encoding.decode(encoding.encode(text)) == text
    assert qwen_tokens("Hello world") == 2  # two common words, one token each
    assert 0 < qwen_tokens(text) < len(text) / 1.5  # BPE merges: fewer tokens than characters
