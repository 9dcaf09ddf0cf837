"""Dist-n / EAD-n as an `evaluate` module; the implementation lives in `dialeval.lexical`."""

import dialeval.modules.lexical as impl


class DistinctN(impl.DistinctNModule):
    """Dist-n = distinct n-grams / total n-grams (Li et al. 2016); EAD-n with `vocab_size`."""
