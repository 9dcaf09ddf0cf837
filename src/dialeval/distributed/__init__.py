"""Scale-out on Ray Data (``pip install 'dialeval[distributed]'``): score and weight corpora that outgrow one
process, with the same numbers and signatures as one process.

>>> import dialeval.distributed as dd  # doctest: +SKIP
>>> dd.score("big.parquet", METRIC, columns={"predictions": "response"}, address="auto")  # doctest: +SKIP
>>> dd.score("s3://bucket/big/", METRIC, space="my_space/", output="s3://bucket/labels/")  # doctest: +SKIP

Layout: :mod:`.columns` (input roles ↔ columns), :mod:`.states` (the mean of an item column, pure),
:mod:`.workers` (helpers for batch functions and actors), :mod:`.engine` (Ray plumbing, pyarrow filesystems),
:mod:`.api` (runs the metrics' ``scale_out`` hooks), :mod:`.driver` (the CLI's driver process). Each metric's
plan, worker functions and mergeable state live in its family's core, named by its declaration.
Ray is imported only when a job runs, and this package imports :mod:`.api` on first use, so the
single-process CLI can read :mod:`.columns` without loading the engine.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Settings", "dress_weights", "score", "score_many", "supported"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from dialeval.distributed import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
