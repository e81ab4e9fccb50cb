"""Reflection prompts, rendered from prompts/reflection/ by the one prompt function (prompts.render_prompt).

The system part is static per variant and language (no variable at all), so that a provider can cache it: the
instructions, the three hard constraints, the output format and worked examples. Everything that changes per call
goes in the user part: the transcript, the known topics, the flagged turns, and on a retry the problems.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hindsight_insights.config import Language
from hindsight_insights.prompts import render_prompt
from hindsight_insights.reflection.transcript import SessionView, Variant, as_transcript_text

MAX_KNOWN_TOPICS = 40


@dataclass(frozen=True)
class KnownTopic:
    """A topic already stored for this user or project, shown so that a new insight lands in the same slot."""

    topic: str
    scene: str


@dataclass(frozen=True)
class FaultyInsight:
    """An insight a reviewer found faulty, named in a repair's re-reflection so the model does not learn it again."""

    topic: str
    action: str


@dataclass(frozen=True)
class ReflectionPrompt:
    variant: Variant
    language: Language
    system: str
    user: str


def system_prompt(prompts_dir: Path, variant: Variant, language: Language) -> str:
    return render_prompt(prompts_dir, f"reflection/{variant}.{language}.md.j2").strip()


def user_prompt(
    prompts_dir: Path,
    variant: Variant,
    language: Language,
    sessions: Sequence[SessionView],
    known_topics: Sequence[KnownTopic] = (),
    faulty: Sequence[FaultyInsight] = (),
) -> str:
    inert = [
        FaultyInsight(
            topic=" ".join(as_transcript_text(f.topic).split()), action=" ".join(as_transcript_text(f.action).split())
        )
        for f in faulty
    ]
    shown = [
        KnownTopic(
            topic=" ".join(as_transcript_text(known.topic).split()),
            scene=" ".join(as_transcript_text(known.scene).split()),
        )
        for known in known_topics[:MAX_KNOWN_TOPICS]
    ]
    flagged = [(session.label, index) for session in sessions for index in session.flagged]
    return render_prompt(
        prompts_dir,
        f"reflection/transcript.{language}.md.j2",
        variant=variant,
        sessions=sessions,
        known_topics=shown,
        flagged=flagged,
        faulty=inert,
    ).strip()


def build_prompt(
    prompts_dir: Path,
    variant: Variant,
    language: Language,
    sessions: Sequence[SessionView],
    known_topics: Sequence[KnownTopic] = (),
    faulty: Sequence[FaultyInsight] = (),
) -> ReflectionPrompt:
    return ReflectionPrompt(
        variant=variant,
        language=language,
        system=system_prompt(prompts_dir, variant, language),
        user=user_prompt(prompts_dir, variant, language, sessions, known_topics, faulty),
    )


def retry_prompt(prompts_dir: Path, prompt: ReflectionPrompt, problems: str, *, cut_off: bool) -> str:
    """The user part once more, followed by what was wrong with the answer. The system part is unchanged, so the
    retry still reads it from the cache."""
    feedback = render_prompt(
        prompts_dir, f"reflection/retry.{prompt.language}.md.j2", problems=problems[:2000], cut_off=cut_off
    ).strip()
    return f"{prompt.user}\n\n{feedback}"
