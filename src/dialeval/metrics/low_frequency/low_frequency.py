"""LF (low-frequency token share) as an `evaluate` module; the implementation lives in `dialeval.lexical`."""

import dialeval.modules.lexical as impl


class LowFrequency(impl.LowFrequencyModule):
    """LF = share of unigram tokens whose count is <= threshold."""
