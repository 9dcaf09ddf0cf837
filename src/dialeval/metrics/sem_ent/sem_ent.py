"""Sem-Ent (semantic diversity over a fitted semantic space) as an `evaluate` module; see `dialeval.semantic`."""

import dialeval.modules.sem_ent as impl


class SemEnt(impl.SemEntModule):
    """Sem-Ent = −Σ p̃(j) ln p̃(j) over k semantic clusters of human responses (Han et al., EMNLP 2022 Findings)."""
