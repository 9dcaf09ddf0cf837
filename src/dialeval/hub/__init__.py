"""The Hugging Face Hub: ``dialeval hub build`` (:mod:`~dialeval.hub.repos`: one folder per metric Space, the
demo Space, the dataset repos and the leaderboard repo), their cards (:mod:`~dialeval.hub.cards`) and the
Space hardware a torch build suits (:mod:`~dialeval.hub.space_hardware`).

It may import :mod:`dialeval.registry`, :mod:`dialeval.io`, :mod:`dialeval.meta` and the dataset builders.
"""
