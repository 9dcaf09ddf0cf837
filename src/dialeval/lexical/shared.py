"""Several lexical metrics (Dist-n/EAD-n, Ent-n, LF) over the same responses in one process, from one
tokenization and one n-gram count: what the Ray engine does per chunk (:mod:`dialeval.lexical.scale_out`),
done once over the whole corpus. The plans validate each metric's options with the core's validators, the
metrics that tokenize the same way share one :class:`~dialeval.lexical.ngrams.NgramCounts` of the union of
their orders, and each finishes with the core's ``*_result`` function, so every number and signature equals
that metric's own ``compute``.

>>> from dialeval.lexical import compute_many  # doctest: +SKIP
>>> compute_many(["I don't know .", "Sure !"], {"distinct_n": {}, "ent_n": {"n": [1, 2]}, "low_frequency": {}})
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dialeval.io.text import check_num_workers
from dialeval.lexical.core import corpus_texts
from dialeval.lexical.ngrams import count_ngrams
from dialeval.lexical.plans import (
    PLAN_OPTIONS,
    LexicalPlan,
    finish_counts,
    joint_orders,
    lexical_plan,
)
from dialeval.registry import check_options
from dialeval.registry import get as get_declaration

#: The metrics :func:`compute_many` shares counts between.
SHARED = tuple(PLAN_OPTIONS)


def shares_counts(metric: str, options: Mapping[str, Any]) -> bool:
    """Whether ``metric`` with ``options`` can take its numbers from a shared corpus count (per-set scores
    cannot)."""
    return metric in SHARED and options.get("level", "corpus") == "corpus"


def compute_many(predictions: Any, metrics: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """``{metric: result}`` for several lexical metrics (``{metric: options}``, each a name in :data:`SHARED`
    with corpus-level options) over the same ``predictions``: the responses are checked once, each distinct
    response is tokenized once per tokenizer, and one n-gram count per tokenizer serves every metric that
    uses it. Results equal each metric's own ``compute`` (Li et al. 2016; Zhang et al. 2018; Li et al. 2020)."""
    plans: dict[str, LexicalPlan] = {}
    workers = 0
    for name, options in metrics.items():
        if not shares_counts(name, options):
            raise ValueError(f"compute_many shares corpus counts between {list(SHARED)} (level='corpus'); "
                             f"compute {name!r} with these options on its own.")
        check_options(get_declaration(name), dict(options))
        workers = max(workers, check_num_workers(options.get("num_workers", 0)))
        plans[name] = lexical_plan(name, dict(options))
    texts = corpus_texts(predictions)
    groups: dict[tuple[Any, ...], list[LexicalPlan]] = {}
    for plan in plans.values():
        groups.setdefault(plan.share_key, []).append(plan)
    results: dict[str, dict[str, Any]] = {}
    for members in groups.values():
        counts = count_ngrams(texts, joint_orders(members), members[0].tokenizer, num_workers=workers)
        for plan in members:
            results[plan.metric] = finish_counts(counts.restrict(plan.orders), plan)
    return {name: results[name] for name in metrics}
