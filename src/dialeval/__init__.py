"""dialeval: dialogue-evaluation metrics for the Hugging Face ecosystem.

Lexical diversity (Dist-n, EAD-n, Ent-n, LF), Sem-Ent and DRESS weights, NLI Diversity and Diversity
Threshold Generation, Vendi and quality-weighted Vendi, FULL follow-up likelihood, an LLM judge, DialStory speaker
recognition (DAC/SAC), and the reference-based baselines (token F-1, BLEU, chrF, METEOR, ROUGE-L, BERTScore).
Every metric is declared once in :mod:`dialeval.registry`; ``dialeval.METRICS`` lists their names.
:mod:`dialeval.meta` ranks metrics against human judgements, on the built-in datasets or on your own file.
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
