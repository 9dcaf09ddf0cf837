"""Semantic diversity (sem_ent and DRESS weights, Han et al. 2022): clustering math (:mod:`.clustering`),
the fitted space (:mod:`.space`), DRESS (:mod:`.dress`) and the metric's core (:mod:`.sem_ent`)."""
