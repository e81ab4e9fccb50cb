"""Search: hard filters first (scene, scope, status, expiry), then hybrid relevance. Real Weaviate."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import weaviate

from hindsight_insights.embedder import Embedder
from hindsight_insights.errors import InvalidInput
from hindsight_insights.models import InsightDraft, InsightKind, InsightStatus
from hindsight_insights.store import InsightStore
from hindsight_insights.store.retrieval import Retrieval
from hindsight_insights.store.schema import INSIGHTS
from hindsight_insights.store.tenancy import project_collection
from testkit.admitted import admitted_as_is

RETURN_ADDRESS = {
    "topic": "退货地址",
    "kind": "fact",
    "scene": "售后服务",
    "observation": "客服在对话中给错了地址，用户纠正说仓库已经搬迁。",
    "action": (
        "当顾客要求办理退货、退款寄回或者询问包裹应该寄到哪里的时候，"
        "请告知最新的退货地址为上海市浦东新区张江路88号华东仓，并提醒在包裹上写明订单号。"
    ),
    "evidence": "你们的退货地址早就换了，现在是张江路88号",
    "confidence": 0.9,
}
TABLE_PREFERENCE = {
    "topic": "方案对比格式",
    "kind": "preference",
    "scene": "方案对比",
    "action": (
        "Whenever the user weighs two or more options, lay the comparison out as a table with one row per criterion."
    ),
    "evidence": "please, tables for comparisons",
    "user_id": "u-wang",
    "scope": "user",
    "confidence": 0.9,
}


def save(store: InsightStore, base: dict[str, Any], **changes: Any) -> Any:
    data = {**base, **changes}
    if not data.get("user_id"):
        data.pop("scope", None)  # without a user it can only be project-wide
    return store.save(admitted_as_is(InsightDraft.parse(data))).id


def hit_ids(store: InsightStore, query: Any, **kwargs: Any) -> list[Any]:
    return [hit.insight.id for hit in store.retrieval.search(query, **kwargs)]


def test_chinese_lexical_match_inside_a_long_sentence(store: InsightStore) -> None:
    target = save(store, RETURN_ADDRESS)
    save(
        store,
        RETURN_ADDRESS,
        topic="发货时间",
        observation="",
        action="当顾客问什么时候发货时，告诉他下单后48小时内发货。",
        evidence="48小时发货",
    )
    hits = store.retrieval.search("退货地址是哪个", scene="售后服务", mode="bm25")
    assert [h.insight.id for h in hits] == [target]  # the shipping-time insight shares no word with the query
    assert hits[0].keyword == pytest.approx(4 / 6)  # 退货 and 地址 found, 哪个 not (length-weighted)
    assert hit_ids(store, "退货地址是哪个", scene="售后服务")[:1] == [target]


def test_cross_lingual_vector_match(store: InsightStore) -> None:
    target = save(store, RETURN_ADDRESS)
    hits = store.retrieval.search("Where should I mail the package back for a refund?", scene="售后服务", mode="vector")
    assert [h.insight.id for h in hits] == [target]
    assert hits[0].keyword == 0.0 and hits[0].similarity > 0.3


def test_a_more_similar_insight_in_another_scene_is_excluded(store: InsightStore) -> None:
    same_scene = save(
        store,
        RETURN_ADDRESS,
        topic="退货运费",
        action="如果顾客问退货运费谁出，告诉他七天内质量问题由我们承担。",
        evidence="运费谁出",
    )
    other_scene = save(store, RETURN_ADDRESS, scene="物流合作")  # the exact text, another scene
    general = save(
        store,
        RETURN_ADDRESS,
        scene="general",
        topic="营业时间",
        action="当顾客问客服营业时间时，回答每天九点到二十一点。",
        evidence="几点上班",
    )
    found = hit_ids(store, "退货地址在哪里？包裹寄回哪里？", scene="售后服务", score_threshold=0.0, top_k=20)
    assert other_scene not in found
    assert same_scene in found and general in found


def test_other_users_excluded_project_wide_included(store: InsightStore) -> None:
    mine = save(store, TABLE_PREFERENCE)
    theirs = save(store, TABLE_PREFERENCE, user_id="u-lee")
    project = save(
        store,
        TABLE_PREFERENCE,
        topic="option comparisons",
        kind="process",
        user_id=None,
        action="Compare options as a table.",
        evidence="tables",
    )
    found = hit_ids(
        store, "Redis or Memcached, which one?", scene="方案对比", user_id="u-wang", score_threshold=0.0, top_k=20
    )
    assert mine in found and project in found and theirs not in found
    anonymous = hit_ids(store, "Redis or Memcached, which one?", scene="方案对比", score_threshold=0.0, top_k=20)
    assert anonymous == [project]


@pytest.mark.parametrize("status", [InsightStatus.PENDING_REVIEW, InsightStatus.REJECTED, InsightStatus.SUSPECT])
def test_ineligible_statuses_are_never_returned(store: InsightStore, status: InsightStatus) -> None:
    hidden = save(store, RETURN_ADDRESS)
    store.set_status(hidden, status)
    assert hit_ids(store, "退货地址", scene="售后服务", score_threshold=0.0, top_k=20) == []
    assert store.retrieval.standing_rules(scene="售后服务", user_id="u") == []


def test_superseded_and_expired_versions_are_never_returned(store: InsightStore) -> None:
    """Superseded and expired follow from newer versions and from time; neither can be set by hand."""
    superseded = save(store, RETURN_ADDRESS)
    newer = save(store, RETURN_ADDRESS, action="当顾客问退货寄到哪里时，告知新地址：杭州市滨江区网商路 699 号。")
    assert store.get(superseded).status is InsightStatus.SUPERSEDED
    assert hit_ids(store, "退货地址 张江路88号华东仓", scene="售后服务", score_threshold=0.0, top_k=20) == [newer]
    expiring = save(store, RETURN_ADDRESS, topic="临时退货点", expire_at=datetime.now(UTC) + timedelta(seconds=1))
    time.sleep(1.5)
    assert store.expire_sweep() == 1 and store.get(expiring).status is InsightStatus.EXPIRED
    assert hit_ids(store, "临时退货点", scene="售后服务", score_threshold=0.0, top_k=20) == [newer]
    for status in (InsightStatus.SUPERSEDED, InsightStatus.EXPIRED):
        with pytest.raises(InvalidInput, match="follows from newer versions and expiry"):
            store.set_status(newer, status)


def test_pending_review_saved_directly_is_not_returned(store: InsightStore) -> None:
    save(store, RETURN_ADDRESS, status="pending_review")
    assert hit_ids(store, "退货地址", scene="售后服务", score_threshold=0.0) == []


def test_expired_by_time_is_excluded_before_any_sweep(store: InsightStore) -> None:
    save(store, RETURN_ADDRESS, expire_at=(datetime.now(UTC) + timedelta(seconds=1)).isoformat())
    assert len(hit_ids(store, "退货地址", scene="售后服务")) == 1
    time.sleep(1.2)
    assert hit_ids(store, "退货地址", scene="售后服务", score_threshold=0.0) == []


def test_superseded_version_is_not_returned(store: InsightStore) -> None:
    old = save(store, RETURN_ADDRESS)
    new = save(
        store,
        RETURN_ADDRESS,
        action="当顾客要退货时，告诉他新的退货地址：杭州市西湖区文三路1号。",
        evidence="仓库搬到杭州了",
    )
    assert hit_ids(store, "退货地址是什么", scene="售后服务", score_threshold=0.0, top_k=20) == [new]
    assert store.get(old).status is InsightStatus.SUPERSEDED


def test_query_may_be_several_turns(store: InsightStore) -> None:
    target = save(store, RETURN_ADDRESS)
    save(
        store,
        RETURN_ADDRESS,
        topic="发票",
        action="当顾客需要发票时，引导他在订单详情页申请电子发票。",
        evidence="发票怎么开",
    )
    turns = ["我上周买的耳机有杂音", "您好，很抱歉给您带来不便，可以为您办理退货", "好的，那我寄到哪里？"]
    assert hit_ids(store, turns, scene="售后服务")[:1] == [target]


def test_threshold_drops_unrelated_insights(store: InsightStore) -> None:
    save(store, RETURN_ADDRESS)
    assert hit_ids(store, "How do I rotate TLS certificates on Kubernetes ingress?", scene="售后服务") == []


def test_top_k_limits_and_ordering_uses_confidence(store: InsightStore) -> None:
    for index in range(8):
        save(
            store,
            RETURN_ADDRESS,
            topic=f"退货规则 {index}",
            action=f"退货第{index}条规则：退货地址相关的说明{index}。",
            evidence=f"e{index}",
            confidence=0.1 * index + 0.1,
        )
    hits = store.retrieval.search("退货地址", scene="售后服务", top_k=3, score_threshold=0.0)
    assert len(hits) == 3
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_kinds_filter(store: InsightStore) -> None:
    fact = save(store, RETURN_ADDRESS)
    save(
        store,
        RETURN_ADDRESS,
        kind="lesson",
        topic="退货教训",
        action="退货地址要先核对系统里的最新值再回答。",
        evidence="又错了",
    )
    assert hit_ids(store, "退货地址", scene="售后服务", kinds=[InsightKind.FACT], score_threshold=0.0) == [fact]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"query": "  "}, "query"),
        ({"query": []}, "query"),
        ({"query": "x", "top_k": 0}, "top_k"),
        ({"query": "x", "top_k": 21}, "top_k"),
        ({"query": "x", "score_threshold": 1.5}, "score_threshold"),
    ],
)
def test_search_rejects_bad_parameters(store: InsightStore, kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        store.retrieval.search(**kwargs)
    assert field in dict(caught.value.problems)


def test_standing_rules_apply_without_similarity(store: InsightStore) -> None:
    older = save(store, TABLE_PREFERENCE)
    newer = save(
        store,
        TABLE_PREFERENCE,
        topic="称呼",
        action="称呼用户为老王，不要叫王老师。",
        evidence="叫我老王就行",
        scene="general",
    )
    save(
        store,
        TABLE_PREFERENCE,
        topic="称呼",
        action="称呼用户为李总。",
        evidence="叫我李总",
        user_id="u-lee",
        scene="general",
    )
    save(
        store,
        TABLE_PREFERENCE,
        topic="depth",
        action="Go deep into internals.",
        evidence="more depth",
        scene="故障排查",
    )
    rules = store.retrieval.standing_rules(scene="方案对比", user_id="u-wang")
    assert [r.id for r in rules] == [newer, older]
    assert store.retrieval.standing_rules(scene="方案对比", user_id="u-wang", limit=1)[0].id == newer
    assert store.retrieval.standing_rules(scene="方案对比", user_id=None) == []
    project_wide = save(store, TABLE_PREFERENCE, topic="语言", user_id=None, action="用中文回答。", evidence="中文")
    assert [r.id for r in store.retrieval.standing_rules(scene="方案对比", user_id=None)] == [project_wide]
    assert project_wide in [r.id for r in store.retrieval.standing_rules(scene="方案对比", user_id="u-wang")]


def test_recall_keeps_the_two_channels_apart(store: InsightStore) -> None:
    preference = save(store, TABLE_PREFERENCE)
    fact = save(store, RETURN_ADDRESS, scene="方案对比")
    recall = store.retrieval.recall("退货地址在哪？", scene="方案对比", user_id="u-wang")
    assert [r.id for r in recall.standing] == [preference]
    assert [h.insight.id for h in recall.situational] == [fact]
    assert [i.id for i in recall.insights] == [preference, fact]


RETURN_RULES = [
    ("退货寄回地址", "当用户要退货或问寄到哪里时，提供杭州仓地址：余杭区良睦路1399号，并提醒在包裹内附订单号。"),
    ("退款到账时间", "当用户问退款多久到账时，说明仓库签收后 3 个工作日内原路退回。"),
    ("七天无理由退货", "当用户问还能不能退货时，从签收日起算 7 天内可无理由退货，商品需完好。"),
    ("破损件需要照片", "当用户说收到的商品破损时，先请他上传外包装和破损处的照片，再办理退换。"),
]


def save_return_rules(store: InsightStore) -> dict[str, Any]:
    return {
        topic: save(store, RETURN_ADDRESS, topic=topic, action=action, observation="", evidence=f"quote: {topic}")
        for topic, action in RETURN_RULES
    }


@pytest.mark.parametrize(
    "conversation", ["What time does your office open on Saturdays?", "你们公司在招聘客服吗？怎么投简历？"]
)
def test_no_match_conversation_in_a_scene_with_insights_gets_nothing(store: InsightStore, conversation: str) -> None:
    """Same scene, another subject: the no-match gate (ranking.py) injects nothing rather than the nearest rule."""
    save_return_rules(store)
    recall = store.retrieval.recall(conversation, scene="售后服务")
    assert recall.situational == [] and recall.standing == []


def test_the_gate_still_finds_the_rule_a_conversation_is_about(store: InsightStore) -> None:
    ids = save_return_rules(store)
    recall = store.retrieval.recall("How long until my refund shows up?", scene="售后服务")
    assert [hit.insight.id for hit in recall.situational] == [ids["退款到账时间"]]


def test_explicit_threshold_is_a_plain_threshold(store: InsightStore) -> None:
    """A caller's score_threshold means what it did before the gate: no margin over the background."""
    save_return_rules(store)
    inputs = store.retrieval.gate_inputs("How long until my refund shows up?", scene="售后服务")
    plain = {
        hit.insight.id
        for hit in store.retrieval.search("How long until my refund shows up?", scene="售后服务", score_threshold=0.1)
    }
    assert plain == {i.insight.id for i in inputs if i.relevance >= 0.1}


BUDGET_USER = "u-qian"
NEWER_UNRELATED = [
    ("称呼钱总", "称呼这位用户为“钱总”，不要叫“钱先生”。"),
    ("回复要短", "回复钱总时不超过五行。"),
    ("文件用 Excel", "给钱总导出的文件一律用 Excel 格式。"),
    ("日期格式", "给钱总写日期时用 YYYY-MM-DD。"),
    ("不要表情符号", "回复钱总时不要使用表情符号。"),
]


def test_standing_rule_matching_the_conversation_survives_a_budget_of_newer_unrelated_ones(store: InsightStore) -> None:
    now = datetime.now(UTC)
    old = store.save(
        admitted_as_is(
            InsightDraft.parse(
                {
                    "topic": "报价币种",
                    "kind": "preference",
                    "scene": "采购",
                    "action": "给钱总报任何产品单价或报价时，一律用美元报价，并注明汇率的日期。",
                    "evidence": "以后报价都给我美元",
                    "user_id": BUDGET_USER,
                    "scope": "user",
                }
            )
        ),
        now=now - timedelta(days=400),
    ).id
    for age, (topic, action) in enumerate(NEWER_UNRELATED, start=1):
        draft = {"topic": topic, "kind": "preference", "scene": "采购", "action": action, "evidence": topic}
        draft |= {"user_id": BUDGET_USER, "scope": "user"}
        store.save(admitted_as_is(InsightDraft.parse(draft)), now=now - timedelta(days=age))
    assert store.settings.standing_rule_budget == 5
    newest_first = store.retrieval.standing_rules(scene="采购", user_id=BUDGET_USER)
    assert old not in [rule.id for rule in newest_first]  # by recency alone, the budget drops it
    recall = store.retrieval.recall("这批 M6 螺丝帮我报个单价，客户在等", scene="采购", user_id=BUDGET_USER)
    assert len(recall.standing) == 5 and old in [rule.id for rule in recall.standing]  # by relevance first


class CountingQuery:
    """The real collection's query object, counting each query; every search waits at a barrier that only two
    searches in flight at the same time can pass, so sequential searches would time out."""

    def __init__(self, inner: Any, barrier: threading.Barrier) -> None:
        self._inner = inner
        self._barrier = barrier
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._inner, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            if name != "fetch_objects":  # reading the chosen standing rules whole comes after their search
                self._barrier.wait(timeout=10)
            return method(*args, **kwargs)

        return counted


class CountingCollection:
    def __init__(self, inner: Any, query: CountingQuery) -> None:
        self._inner = inner
        self.query = query

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def test_recall_searches_both_channels_at_once(
    store: InsightStore, client: weaviate.WeaviateClient, embedder: Embedder
) -> None:
    """Both channels' searches are in flight at the same time; the standing channel then reads the rules it chose
    whole (its search returns only what ranks them), and they are the stored rules, every field."""
    preference = save(store, TABLE_PREFERENCE)
    fact = save(store, RETURN_ADDRESS, scene="方案对比")
    collection = project_collection(client, store.settings.project, INSIGHTS)
    counting = CountingQuery(collection.query, threading.Barrier(2))
    retrieval = Retrieval(CountingCollection(collection, counting), embedder, store.settings)  # type: ignore[arg-type]
    recall = retrieval.recall("退货地址在哪？", scene="方案对比", user_id="u-wang")
    # Behind the gate, the situational candidates are the nearest by cosine (a hybrid query costs more, and only
    # cosine can pass the gate's margin); with a plain threshold, Weaviate's hybrid query finds them.
    assert sorted(counting.calls) == ["fetch_objects", "near_vector", "near_vector"]
    assert [hit.insight.id for hit in recall.situational] == [fact]
    assert recall.standing == [store.get(preference)]
    counting.calls.clear()
    plain = retrieval.recall("退货地址在哪？", scene="方案对比", user_id="u-wang", score_threshold=0.1)
    assert sorted(counting.calls) == ["fetch_objects", "hybrid", "near_vector"]
    assert [hit.insight.id for hit in plain.situational] == [fact] and len(plain.standing) == 1
