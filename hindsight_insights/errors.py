"""Errors a Dify user can act on. Their messages are shown as they are, so they say what to do."""

from __future__ import annotations

from pydantic import ValidationError


class HindsightError(Exception):
    """Base of every error the core raises on purpose."""


class InvalidInput(HindsightError, ValueError):
    """Input broke a rule. `problems` holds (field, rule) pairs; the message lists them all."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        self.problems = problems
        super().__init__("; ".join(f"{field}: {rule}" for field, rule in problems))

    @classmethod
    def from_validation_error(cls, error: ValidationError) -> InvalidInput:
        problems = []
        for item in error.errors():
            field = ".".join(str(part) for part in item["loc"]) or "input"
            rule = str(item["msg"]).removeprefix("Value error, ")
            problems.append((field, rule))
        return cls(problems)


class WeaviateUnavailable(HindsightError):
    """Weaviate could not be reached or started."""


class EmbedderMismatch(HindsightError):
    """The collections hold vectors of another embedder; mixing them would corrupt search."""


class NotFound(HindsightError):
    """No object with that id in this project."""
