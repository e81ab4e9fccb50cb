"""The one configuration model. Read once at the edge (CLI, plugin, worker) and passed down."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

EmbedderName = Literal["use-m3", "openai"]
Language = Literal["zh", "en"]
ReflectionLlm = Literal["auto", "anthropic", "openai", "offline"]
# How a model is made to answer in the reflection schema (hindsight_insights/reflection/).
AnthropicOutput = Literal["json_schema", "tool"]
OpenAIOutput = Literal["auto", "json_schema", "tool", "json_object"]
Effort = Literal["low", "medium", "high", "xhigh", "max"]
ReadConsistency = Literal["ONE", "QUORUM"]


NO_MARGIN = -2.0  # below any difference of two cosines: the gate is a plain threshold


@dataclass(frozen=True)
class RetrievalDefaults:
    """The retrieval constants of one embedder: its similarities have their own scale (ranking.py)."""

    score_threshold: float
    background_margin: float
    background_prior: float  # the cosine of unrelated texts, typically; one pseudo-candidate of the background
    calibrated: bool


RETRIEVAL_DEFAULTS: dict[EmbedderName, RetrievalDefaults] = {
    # bench/eval_retrieval.py --calibrate, on the "tune" split only (ranking.py has the formula).
    "use-m3": RetrievalDefaults(score_threshold=0.13, background_margin=0.16, background_prior=0.10, calibrated=True),
    # Any model behind an OpenAI-compatible endpoint: its scale is unknown, so only the old global threshold applies
    # until it is calibrated (HINDSIGHT_SCORE_THRESHOLD, HINDSIGHT_BACKGROUND_MARGIN; make eval prints the figures).
    "openai": RetrievalDefaults(
        score_threshold=0.17, background_margin=NO_MARGIN, background_prior=0.0, calibrated=False
    ),
}

WEAVIATE_VERSION = "1.39.0"


def _default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hindsight-insights"


def _default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "hindsight-insights" / "weaviate"


class Settings(BaseSettings):
    """Every knob of the core. Environment variables are prefixed `HINDSIGHT_` (e.g. `HINDSIGHT_PROJECT`)."""

    model_config = SettingsConfigDict(env_prefix="HINDSIGHT_", extra="ignore")

    project: str = Field(
        "default",
        min_length=1,
        max_length=100,
        description="Selects the project: its tenant of the shared collections.",
    )
    max_active_tenants: int = Field(
        100,
        ge=1,
        description="Projects kept active in Weaviate at most; the least recently used others are set INACTIVE "
        "(store/tenancy.py) and come back on their next call. Each active project holds about 110 open files on the "
        "server (7 collections), so 100 fit a 20,000 open-file limit with room; raise it with the server's limit.",
    )

    # Weaviate. With no URL, a local server is started (cached binary, Go build, or embedded download).
    weaviate_url: str | None = Field(None, description="e.g. http://weaviate:8080 for Dify's bundled Weaviate.")
    weaviate_grpc_host: str | None = Field(None, description="Defaults to the URL's host.")
    weaviate_grpc_port: int = 50051
    weaviate_api_key: SecretStr | None = None
    weaviate_version: str = WEAVIATE_VERSION
    # Fail fast: a tool call waits at most this long for a Weaviate that is down or frozen.
    weaviate_timeout_s: float = Field(3.0, gt=0, description="Connecting and HTTP calls.")
    weaviate_query_timeout_s: float = Field(5.0, gt=0, description="One search or read.")
    weaviate_insert_timeout_s: float = Field(10.0, gt=0, description="One write (a bulk import may need more).")
    # A cluster (docs/architecture.md, "Replication and consistency"): the collection set is created with this many
    # copies of every tenant; writes wait for a majority of them (QUORUM), reads for `read_consistency`. On one node
    # (factor 1) every level is the same one copy.
    replication_factor: int = Field(
        1, ge=1, description="Copies of each project's data across Weaviate nodes; applied when the set is created."
    )
    read_consistency: ReadConsistency = Field(
        "QUORUM",
        description="QUORUM: with QUORUM writes a read sees every acknowledged write (the save policy reads a slot "
        "before writing it). ONE: faster, and answers while only one copy is up, but may miss a write just made.",
    )
    cache_dir: Path = Field(default_factory=_default_cache_dir)
    data_dir: Path = Field(default_factory=_default_data_dir)

    # Embeddings.
    embedder: EmbedderName = "use-m3"
    # BLAS threads of the built-in embedder. One: a query is a few hundred tokens, and after every call OpenBLAS's
    # idle threads spin for about 0.1 s, taking a core from Weaviate (bench/bench_search.py on two cores: the plugin's
    # p95 went from 101 ms to 23 ms). Two embed a bulk import about 1.5 times faster.
    embedder_threads: int = Field(1, ge=1)
    openai_base_url: str | None = Field(None, description="OpenAI-compatible /v1 base URL, for embedder=openai.")
    openai_api_key: SecretStr | None = None
    openai_model: str = "text-embedding-3-small"
    # e5-style models need to know a query from a passage (e.g. "query: " and "passage: " for multilingual-e5).
    openai_query_prefix: str = Field("", description='Prepended to search queries, e.g. "query: ".')
    openai_passage_prefix: str = Field("", description='Prepended to stored insights, e.g. "passage: ".')

    # Retrieval. Thresholds depend on the embedder: unset, the embedder's RETRIEVAL_DEFAULTS apply
    # (docs/architecture.md, Retrieval; ranking.py has the gate's formula).
    top_k: int = Field(5, ge=1, le=20)
    score_threshold: float | None = Field(None, ge=0.0, le=1.0, description="Relevance needed (ranking.py).")
    background_margin: float | None = Field(
        None, ge=-1.0, le=1.0, description="How far a hit's cosine must stand out from its scene's background."
    )
    hybrid_alpha: float = Field(0.8, ge=0.0, le=1.0, description="1 = vector only, 0 = BM25 only.")
    recency_half_life_days: float = Field(90.0, gt=0)
    standing_rule_budget: int = Field(5, ge=0, le=20, description="Standing rules injected at most, per call.")
    # With a workspace rerank model (search_insight's rerank_model; reranking.py), the situational rules it scores at
    # this or more pass, instead of the no-match gate. 0.5: Dify's own default for a rerank model's score threshold;
    # rerank models score 0-1, a rule about the conversation's subject typically far above it, a neighbour below.
    rerank_threshold: float = Field(
        0.5, ge=0.0, le=1.0, description="A rerank model's score a situational rule needs to pass (reranking.py)."
    )
    must_confidence: float = Field(0.7, ge=0.0, le=1.0, description="At or above: 'must'; below: 'consider'.")
    language: Language = "zh"

    # Layered writes of a detected correction (governance/lessons.py): below user_fact_confidence a factual
    # correction holds for its session only; at project_fact_confidence or more, verified, for the whole project.
    user_fact_confidence: float = Field(0.7, ge=0.0, le=1.0)
    project_fact_confidence: float = Field(0.85, ge=0.0, le=1.0)
    # How many users must independently correct a fact the same way before it holds project-wide unreviewed.
    project_fact_agreement: int = Field(2, ge=2)
    # Blame (governance/blame.py): a correction of an answer blames the insights injected into it, each weighted 0-1 by
    # how closely the correction touches it; at this much blame, more than its uses without complaint, it is suspect.
    blame_suspect_at: float = Field(
        2.0, gt=0, description="Weighted blame at which an insight becomes suspect (about this many corrections)."
    )
    timezone: str = Field("UTC", description="IANA name, e.g. Asia/Shanghai: the rules' dates, and the schedules.")

    # The learned correction detector beside the rules (detection/learned_corrections.py, detector_model.py). The
    # unsure band is on P(correction); unset, the band chosen in training applies. An unsure turn is one a later
    # step may ask a workspace model about.
    detector: bool = Field(True, description="Off: the rule-based correction detector decides alone.")
    detector_unsure_low: float | None = Field(None, ge=0.0, le=1.0)
    detector_unsure_high: float | None = Field(None, ge=0.0, le=1.0)

    @property
    def relevance_threshold(self) -> float:
        """The configured score_threshold, else the embedder's calibrated one."""
        default = RETRIEVAL_DEFAULTS[self.embedder].score_threshold
        return default if self.score_threshold is None else self.score_threshold

    @property
    def margin(self) -> float:
        """The configured background_margin; else none when a score_threshold is configured (a plain threshold, as
        before the gate); else the embedder's calibrated one."""
        if self.background_margin is not None:
            return self.background_margin
        if self.score_threshold is not None:
            return NO_MARGIN
        return RETRIEVAL_DEFAULTS[self.embedder].background_margin

    @property
    def background_prior(self) -> float:
        return RETRIEVAL_DEFAULTS[self.embedder].background_prior

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"{value!r} is not an IANA time zone such as UTC or Asia/Shanghai") from None
        return value

    prompts_dir: Path = Field(default_factory=lambda: Path(__file__).resolve().parent.parent / "prompts")

    # The poisoning screen on every write (screening.py, admission.py; docs/architecture.md "Screening"). Unset
    # thresholds are the trained band's, read from the model file: scripts/train_screen.choose_band picks unsure_at and
    # rule_at on the training corpus's out-of-fold calibrated probabilities (the fewest benign items held while no
    # more attacks pass than when every pattern held, and at most 5%; suspect_at stays 0.50, even odds). A pattern
    # holds only from rule_at (the learned screen agrees); with screen_learned=false the patterns hold alone. Trained
    # band (2,776 items): suspect 0.50, unsure 0.27, rule 0.27 (out of fold, each fold's n-gram vocabulary fitted on
    # its own training items: 11.8% of benign held, 4.2% of attacks passed).
    screen_learned: bool = Field(
        True, description="Rules + the learned screen; false: the rules alone. Always the built-in embedder's vectors."
    )
    screen_suspect_at: float | None = Field(None, ge=0.0, le=1.0, description="Attack probability held as suspect.")
    screen_unsure_at: float | None = Field(
        None, ge=0.0, le=1.0, description="From here to screen_suspect_at: unsure (the workspace model, else held)."
    )
    screen_rule_at: float | None = Field(
        None, ge=0.0, le=1.0, description="Attack probability from which a pattern that fired holds (suspect)."
    )
    model_calls_per_day: int = Field(
        500,
        ge=0,
        le=10_000,  # the budget counts a day's calls in one read (store/budget.py MAX_CALLS_COUNTED)
        description="Workspace-model classification calls per project per day (cascade.py), shared by the screen "
        "and the correction detector; past it, unsure items are held. 0: none.",
    )

    # Reflection: turning stored sessions into insights (hindsight_insights/reflection/, docs/architecture.md).
    reflection_llm: ReflectionLlm = Field(
        "auto",
        description="auto (anthropic with a key, else openai with a base URL, else offline), or one of those.",
    )
    anthropic_api_key: SecretStr | None = Field(None, description="Unset: the SDK reads ANTHROPIC_API_KEY.")
    anthropic_base_url: str | None = Field(None, description="Unset: the SDK's default (or ANTHROPIC_BASE_URL).")
    anthropic_model: str = Field("claude-sonnet-5-5", min_length=1, description="The current Sonnet.")
    # Sonnet 5.5 and Opus 5.5 refuse forced tool use (400); older models such as claude-haiku-4-5 take either.
    anthropic_output: AnthropicOutput = Field("json_schema", description="output_config json_schema, or a forced tool.")
    anthropic_effort: Effort | None = Field("medium", description="output_config.effort; empty for models without it.")
    reflection_base_url: str | None = Field(None, description="OpenAI-compatible /v1 base URL (Qwen, DeepSeek, vLLM).")
    reflection_api_key: SecretStr | None = None
    reflection_model: str | None = Field(None, description="The model name the endpoint serves.")
    reflection_output: OpenAIOutput = Field("auto", description="auto: json_schema, else a tool call, else JSON mode.")
    llm_timeout_s: float = Field(120.0, gt=0, description="One LLM request, before the SDK retries it.")
    llm_max_retries: int = Field(2, ge=0, le=10, description="SDK retries with backoff on 408/409/429/5xx, timeouts.")
    reflection_max_output_tokens: int = Field(
        8192, ge=256, le=64000, description="max_tokens of one reflection, adaptive thinking included."
    )
    reflection_max_transcript_chars: int = Field(
        16000, ge=2000, le=200_000, description="Cap on the transcript text sent per reflection (newest turns kept)."
    )
    reflection_batch_poll_s: float = Field(60.0, gt=0, description="How often the nightly batch is polled.")

    # The reflection worker (worker/, docs/architecture.md "The worker"). Times of day and days are in `timezone`.
    worker_state_url: str | None = Field(
        None,
        description="SQLAlchemy URL of the worker's state (schedules, claims, reflection log). Unset: a SQLite file "
        "in data_dir. Several replicas share one database, e.g. postgresql+psycopg://user:pw@host/db.",
    )
    worker_poll_interval_s: float = Field(15.0, gt=0, le=3600, description="How often new signals are looked for.")
    worker_idle_minutes: float = Field(30.0, gt=0, description="A session this long without a turn has ended.")
    worker_anomaly_debounce_s: float = Field(
        60.0, ge=0, description="At most one anomaly reflection per session in this window; later signals wait."
    )
    worker_nightly_time: str = Field("03:00", description="HH:MM: the nightly run over each active user's sessions.")
    worker_nightly_lookback_days: float = Field(7.0, gt=0, description="The sessions a nightly reflection reads.")
    worker_token_budget: int = Field(
        2_000_000, ge=0, description="Tokens (in + out) per day for the project's reflections; 0: no limit."
    )
    worker_anomaly_reserve: int = Field(
        200_000, ge=0, description="Past the budget, anomaly reflections go on until this many tokens more."
    )
    worker_batch_threshold: int = Field(
        20, ge=0, description="Above this many users, the nightly run uses Anthropic's Message Batches API."
    )
    worker_claim_lease_s: float = Field(
        120.0, ge=1, description="A claim lapses this long after its last renewal (a stopped worker's work is redone)."
    )
    worker_max_attempts: int = Field(3, ge=1, le=20, description="Tries per reflection before it is given up.")
    worker_expire_interval_minutes: float = Field(60.0, gt=0, description="How often the expiry sweep runs.")
    worker_retire_after_days: float = Field(
        30.0,
        ge=0,
        description="Retire active insights below the confidence, unchanged and not injected this long; 0: never.",
    )
    worker_retire_below_confidence: float = Field(0.5, ge=0.0, le=1.0, description="See worker_retire_after_days.")
    # The worker's Prometheus metrics (worker/metrics.py, docs/metrics.md), served at http://127.0.0.1:PORT/metrics.
    metrics_port: int = Field(0, ge=0, le=65535, description="The worker's metrics port on 127.0.0.1; 0: no metrics.")
    metrics_window_hours: float = Field(
        24.0, gt=0, le=24 * 31, description="The recent turns the error, correction and knowledge-gap rates read."
    )

    # Few-shot examples (store/examples.py): (what the agent said -> what the user corrected it to) pairs from detected
    # corrections, redacted, for their user until a reviewer promotes one; search_insight adds at most 3 when the
    # builder enables them.
    fewshot_ttl_days: float = Field(30.0, gt=0, description="An example is shown for this long after it was learned.")
    fewshot_min_similarity: float = Field(
        0.35, ge=-1.0, le=1.0, description="Cosine an example needs to the recent turns to be shown."
    )
    fewshot_duplicate_similarity: float = Field(
        0.9, ge=0.0, le=1.0, description="Examples at least this close (cosine) are one: the newest wording kept."
    )
    # Prompt suggestions (suggestions.py): the nightly run groups the correction records by topic, scene and type.
    suggestion_window_days: float = Field(30.0, gt=0, description="The corrections a night's mining reads.")
    suggestion_min_corrections: int = Field(3, ge=1, description="Corrections of one group before it is suggested.")
    suggestion_reopen_growth: float = Field(
        2.0, gt=1.0, description="A dismissed suggestion comes back once its corrections grow by this factor."
    )

    @field_validator("worker_nightly_time")
    @classmethod
    def _time_of_day(cls, value: str) -> str:
        hour, _, minute = value.strip().partition(":")
        if not (hour.isdigit() and minute.isdigit() and int(hour) < 24 and int(minute) < 60 and len(minute) == 2):
            raise ValueError(f"{value!r} is not a time of day as HH:MM, such as 03:00")
        return f"{int(hour):02d}:{minute}"

    @field_validator("anthropic_effort", mode="before")
    @classmethod
    def _no_effort(cls, value: object) -> object:
        # HINDSIGHT_ANTHROPIC_EFFORT= (empty) or none: send no effort, for models that do not take it.
        return None if isinstance(value, str) and value.strip().lower() in ("", "none") else value
