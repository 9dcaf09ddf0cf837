"""Meta-evaluation: which metric agrees with human judgements. Dataset adapters (rows of a built-in dataset or
of a user's file), the statistics (:mod:`~dialeval.meta.stats`, pure functions of arrays), one metric on one
dataset (:mod:`~dialeval.meta.evaluation`), the leaderboard with its quality rows and clusters, publishing to
the Hub. Each dataset declares its protocol, levels, targets and published numbers in its builder
(:mod:`~dialeval.meta.sources`); a user's own file is read by :mod:`~dialeval.meta.own_data`.

It may import :mod:`dialeval.registry`, :mod:`dialeval.io`, :mod:`dialeval.models` and the dataset builders;
metrics enter only through their declarations.
"""
