"""What people type: per-request :class:`Limits`, the ``parse_*`` functions for the text boxes, and
:class:`UIInputs` (everything a request holds, parsed and checked). Problems raise :class:`InputError`,
a ``ValueError`` whose message is shown as is in the UI."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from dialeval.io.readers import split_lines
from dialeval.models.runtime import env_int


class InputError(ValueError):
    """A problem with what a person typed or uploaded; the message is shown as is in the UI."""


@dataclass(frozen=True)
class Limits:
    """Per-request limits of the Space (environment overrides: ``DIALEVAL_MAX_RESPONSES``,
    ``DIALEVAL_MAX_CHARS``, ``DIALEVAL_MAX_UPLOAD_BYTES``)."""

    max_responses: int = 500
    max_chars: int = 1000
    max_upload_bytes: int = 2_000_000
    max_sets: int = 50
    max_set_size: int = 20
    max_turns: int = 60
    max_references: int = 2000

    @classmethod
    def from_env(cls) -> Limits:
        return cls(
            max_responses=env_int("DIALEVAL_MAX_RESPONSES", cls.max_responses),
            max_chars=env_int("DIALEVAL_MAX_CHARS", cls.max_chars),
            max_upload_bytes=env_int("DIALEVAL_MAX_UPLOAD_BYTES", cls.max_upload_bytes),
        )

    def describe(self) -> str:
        return (f"at most {self.max_responses} responses per request, {self.max_chars} characters per "
                f"response, {self.max_sets} sets of up to {self.max_set_size} responses, "
                f"{self.max_turns} dialogue turns, {self.max_references} reference responses, uploads up "
                f"to {human_bytes(self.max_upload_bytes)}")


def human_bytes(n: float) -> str:
    """``4000`` → ``"4 KB"`` (decimal units, as people read file sizes)."""
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:g} {unit}" if unit == "bytes" else f"{n:.3g} {unit}"
        n /= 1000
    return f"{n} bytes"  # pragma: no cover


def check_chars(texts: Sequence[str], what: str, limits: Limits) -> None:
    for i, t in enumerate(texts, 1):
        if len(t) > limits.max_chars:
            raise InputError(f"{what} {i} has {len(t)} characters; the limit is {limits.max_chars} per "
                             f"response. Shorten it or run dialeval locally for long texts.")


def check_sets(sets: list[list[str]], what: str, limits: Limits) -> None:
    """Set count, set size, characters and total responses within ``limits``."""
    if len(sets) > limits.max_sets:
        raise InputError(f"{what}: {len(sets)} sets; the limit is {limits.max_sets} per request.")
    total = 0
    for i, s in enumerate(sets, 1):
        if len(s) > limits.max_set_size:
            raise InputError(f"{what}: set {i} has {len(s)} responses; the limit is {limits.max_set_size} "
                             "per set (set metrics score every ordered pair).")
        check_chars(s, f"{what}: set {i}, response", limits)
        total += len(s)
    if total > limits.max_responses:
        raise InputError(f"{what}: {total} responses in all; the limit is {limits.max_responses} per request.")


def check_turns(turns: list[str], what: str, limits: Limits) -> None:
    if len(turns) > limits.max_turns:
        raise InputError(f"{what}: {len(turns)} turns; the limit is {limits.max_turns}.")
    check_chars(turns, f"{what}: turn", limits)


# ---------------------------------------------------------------------------------------------------
# Text boxes → lists


def parse_lines(text: str | None, what: str = "Responses", limits: Limits | None = None) -> list[str]:
    """One item per non-blank line, outer whitespace stripped."""
    limits = limits or Limits()
    items = [line.strip() for line in split_lines(text or "") if line.strip()]
    if len(items) > limits.max_responses:
        raise InputError(f"{what}: {len(items)} lines; the limit is {limits.max_responses} per request. "
                         "Score a sample here, or the whole file with `dialeval score` locally.")
    check_chars(items, f"{what}: line", limits)
    return items


def parse_sets(text: str | None, what: str = "Response sets", limits: Limits | None = None) -> list[list[str]]:
    """Response sets: one response per line, a blank line between sets."""
    sets: list[list[str]] = []
    current: list[str] = []
    for line in split_lines(text or ""):
        if line.strip():
            current.append(line.strip())
        elif current:
            sets.append(current)
            current = []
    if current:
        sets.append(current)
    check_sets(sets, what, limits or Limits())
    return sets


def parse_dialogue(text: str | None, limits: Limits | None = None) -> list[str]:
    """A dialogue: one turn per line (speaker prefixes such as ``User:`` are kept as typed)."""
    turns = [line.strip() for line in split_lines(text or "") if line.strip()]
    check_turns(turns, "Dialogue", limits or Limits())
    return turns


def parse_speakers(text: str | None, what: str = "Speakers") -> list[list[str]]:
    """Speaker lists: one story per line, names separated by commas."""
    stories = []
    for i, line in enumerate(split_lines(text or ""), 1):
        if not line.strip():
            continue
        names = [n.strip() for n in line.split(",")]
        if any(not n for n in names):
            raise InputError(f"{what}: line {i} has an empty speaker name; separate names with single commas.")
        stories.append(names)
    return stories


@dataclass
class UIInputs:
    """Everything a request can hold, already parsed and checked against :class:`Limits`."""

    responses: list[str] = field(default_factory=list)
    sets: list[list[str]] = field(default_factory=list)
    dialogue: list[str] = field(default_factory=list)
    references: list[str] = field(default_factory=list)
    speakers_predicted: list[list[str]] = field(default_factory=list)
    speakers_gold: list[list[str]] = field(default_factory=list)
    turns_generated: list[list[str]] = field(default_factory=list)
    turns_gold: list[list[str]] = field(default_factory=list)

    @classmethod
    def from_text(cls, responses: str | None = "", sets: str | None = "", dialogue: str | None = "",
                  references: str | None = "", speakers_predicted: str | None = "",
                  speakers_gold: str | None = "", turns_generated: str | None = "",
                  turns_gold: str | None = "", limits: Limits | None = None) -> UIInputs:
        limits = limits or Limits()
        return cls(
            responses=parse_lines(responses, "Responses", limits),
            sets=parse_sets(sets, "Response sets", limits),
            dialogue=parse_dialogue(dialogue, limits),
            references=parse_lines(references, "Reference responses", Limits(
                max_responses=limits.max_references, max_chars=limits.max_chars)),
            speakers_predicted=parse_speakers(speakers_predicted, "Predicted speakers"),
            speakers_gold=parse_speakers(speakers_gold, "Gold speakers"),
            turns_generated=parse_sets(turns_generated, "Generated turns", limits),
            turns_gold=parse_sets(turns_gold, "Gold turns", limits),
        )


# ---------------------------------------------------------------------------------------------------
# Which boxes each input kind reads (see :data:`dialeval.registry.INPUT_KINDS`)

#: The text boxes, in the order of the demo's ``/evaluate`` endpoint: field → (label, hint).
BOXES: dict[str, tuple[str, str]] = {
    "responses": ("Responses", "one response per line"),
    "sets": ("Response sets", "one response per line, a blank line between sets"),
    "dialogue": ("Dialogue", "one turn per line, oldest first"),
    "references": ("Reference responses", "one per line"),
    "speakers_predicted": ("Predicted speakers", "one story per line, comma-separated"),
    "speakers_gold": ("Gold speakers", "one story per line, comma-separated"),
    "turns_generated": ("Generated turns", "one turn per line, a blank line between stories"),
    "turns_gold": ("Gold turns", "one turn per line, a blank line between stories"),
}

#: Input kind → the boxes it reads.
KIND_BOXES: dict[str, tuple[str, ...]] = {
    "responses": ("responses",),
    "response_sets": ("sets",),
    "dialogues": ("dialogue",),
    "turns": ("dialogue",),
    "speakers": ("speakers_predicted", "speakers_gold"),
    "story_turns": ("turns_generated", "turns_gold"),
    "references": ("responses", "references"),
}


def boxes_for(kind: str, takes_references: bool = False) -> tuple[str, ...]:
    """The boxes a metric with input ``kind`` reads (plus ``references`` when it takes them)."""
    return KIND_BOXES[kind] + (("references",) if takes_references else ())


def box_text(box: str, values: list[Any]) -> str:
    """The text of box ``box`` holding ``values`` (the inverse of its ``parse_*``)."""
    if box == "sets" or box.startswith("turns_"):
        return "\n\n".join("\n".join(s) for s in values)
    if box.startswith("speakers"):
        return "\n".join(", ".join(s) for s in values)
    return "\n".join(values)
