"""dialeval: dialogue-evaluation metrics for the Hugging Face ecosystem.

Lexical diversity (Dist-n, EAD-n, Ent-n, LF), Sem-Ent and DRESS weights, NLI Diversity and Diversity
Threshold Generation, FULL follow-up likelihood, and DialStory speaker recognition (DAC/SAC).
"""

from ._version import __version__
from .loading import METRICS, load

__all__ = ["METRICS", "__version__", "load"]
