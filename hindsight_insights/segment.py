"""Word segmentation for BM25.

Weaviate's BM25 does nothing useful on unsegmented Chinese, and Dify's bundled Weaviate has GSE off. So text is
segmented here with rjieba (search mode: 上海市浦东新区 also yields 上海, 浦东, 新区) and stored in a property that
Weaviate tokenises on whitespace. That works on every Weaviate version.
"""

from __future__ import annotations

import unicodedata

import rjieba

# Function words that would otherwise make every Chinese text match every other one lexically.
_ZH_STOPWORDS = frozenset(
    """
    的 了 是 在 我 你 他 她 它 们 我们 你们 吗 呢 吧 啊 呀 哦 把 被 和 与 及 或 就 都 也 还 又 要 给 请 这 那 这个 那个
    一个 有 没有 不 很 么 什么 怎么 为什么 会 能 可以 让 对 从 到 上 下 里 中 之 而 但 所以 因为 如果 就是 一下 一些
    """.split()
)
_EN_STOPWORDS = frozenset(
    """
    a an the and or but if then of to in on at for from by with as is are was were be been it its this that these
    those i you he she we they me my your our their do does did not no so can could would should will
    """.split()
)


# Stop words that change what an instruction means: kept when comparing two instructions (ranking.same_instruction).
NEGATIONS = frozenset({"不", "没", "没有", "不是", "not", "no", "nor", "never", "without"})


def tokens(text: str, keep: frozenset[str] = frozenset()) -> list[str]:
    """Lower-cased search tokens of zh/en text, without punctuation, spaces or stop words (except those in `keep`)."""
    normalized = unicodedata.normalize("NFKC", text).lower()
    result = []
    for token in rjieba.cut_for_search(normalized):
        token = token.strip()
        if not token or not any(ch.isalnum() for ch in token):
            continue
        if (token in _ZH_STOPWORDS or token in _EN_STOPWORDS) and token not in keep:
            continue
        result.append(token)
    return result


def segment(text: str) -> str:
    """The whitespace-joined tokens: what goes into the BM25 property and into a BM25 query."""
    return " ".join(tokens(text))
