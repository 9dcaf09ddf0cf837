"""Lexical diversity (distinct_n, ent_n, low_frequency): the n-gram counter (:mod:`.ngrams`), the formulas
as pure functions of counts (:mod:`.formulas`), the validated core with signatures (:mod:`.core`), the plans
(:mod:`.plans`) and :func:`compute_many` (:mod:`.shared`: several metrics from one tokenization and count)."""

from typing import Any

__all__ = ["compute_many"]


def __getattr__(name: str) -> Any:
    if name == "compute_many":
        from dialeval.lexical.shared import compute_many

        return compute_many
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
