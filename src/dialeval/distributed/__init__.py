"""Scale-out on Ray Data (``pip install 'dialeval[distributed]'``): score and weight corpora that outgrow one
process, with the same numbers and signatures as one process.

>>> import dialeval.distributed as dd  # doctest: +SKIP
>>> dd.score("big.parquet", "distinct_n", columns={"predictions": "response"}, address="auto")  # doctest: +SKIP
>>> dd.score("big.parquet", "sem_ent", space="my_space/", output="labels/")  # doctest: +SKIP

Layout: :mod:`.columns` (input roles ↔ columns), :mod:`.states` (mergeable states, pure), :mod:`.workers`
(batch functions and actor classes), :mod:`.engine` (Ray plumbing), :mod:`.api` (one plan per metric).
Ray is imported only when a job runs.
"""

from dialeval.distributed.api import dress_weights, score, supported

__all__ = ["dress_weights", "score", "supported"]
