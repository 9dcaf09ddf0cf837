"""Lexical diversity (distinct_n, ent_n, low_frequency): the n-gram counter (:mod:`.ngrams`), the formulas
as pure functions of counts (:mod:`.formulas`) and the validated core with signatures (:mod:`.core`)."""
