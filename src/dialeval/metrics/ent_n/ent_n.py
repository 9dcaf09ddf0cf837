"""Ent-n as an `evaluate` module; the implementation lives in `dialeval.lexical`."""

import dialeval.modules.lexical as impl


class EntN(impl.EntNModule):
    """Ent-n = -sum_g p(g) log_base p(g) over the corpus n-gram distribution."""
