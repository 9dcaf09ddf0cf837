"""dialeval: dialogue-evaluation metrics for the Hugging Face ecosystem.

Lexical diversity (Dist-n, EAD-n, Ent-n, LF), Sem-Ent and DRESS weights, NLI Diversity and Diversity
Threshold Generation, FULL follow-up likelihood, and DialStory speaker recognition (DAC/SAC). Every
metric is declared once in :mod:`dialeval.registry`; ``dialeval.METRICS`` lists their names.
"""

from typing import Any

from dialeval._version import __version__
from dialeval.models.loading import load
from dialeval.registry import declarations
from dialeval.registry import get as declaration

__all__ = ["METRICS", "__version__", "declaration", "declarations", "load"]


def __getattr__(name: str) -> Any:
    if name == "METRICS":
        from dialeval.registry import metric_names

        return metric_names()
    raise AttributeError(name)
