"""The leaderboard's paired tests of two metrics scored on the same rows (:mod:`dialeval.meta.leaderboard`): the
difference of the two statistics with a paired bootstrap p-value (:func:`dialeval.meta.stats.paired_bootstrap`),
for Spearman ρ Williams' test for dependent correlations (:func:`dialeval.meta.stats.williams_test`), on rated
data the paired permutation test the clusters use (:func:`dialeval.meta.quality.permutation_p`), and why a pair
says nothing (:func:`pair_left_out`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dialeval.meta import quality as lq
from dialeval.meta.sources import DatasetDeclaration
from dialeval.meta.stats import paired_bootstrap, spearman, williams_test
from dialeval.meta.targets import STATISTICS


def pair_left_out(a: str, b: str, sa: np.ndarray, sb: np.ndarray, target: Sequence[float]) -> str | None:
    """Why the paired test of ``a`` and ``b`` on ``target`` says nothing (``None`` when it is kept): a metric
    against itself (the same name, or the same scores under two names), or a metric whose scores are the human
    reference itself, where Williams' test only measures the reference against itself."""
    y = np.asarray(target, dtype=float)
    if a == b or np.array_equal(sa, sb):
        return "self-pair: the two metrics' scores are identical"
    for name, s in ((a, sa), (b, sb)):
        if np.array_equal(s, y):
            return f"{name} is the human reference of this target"
    return None


def _pair_tests(a: str, b: str, sa: np.ndarray, sb: np.ndarray, target: Any, base: dict[str, Any],
                n_resamples: int, seed: int, confidence: float) -> dict[str, Any]:
    y = np.asarray(target.values, dtype=float)
    fn = STATISTICS[target.statistic]
    boot = paired_bootstrap(fn, sa, sb, y, n_resamples=n_resamples, seed=seed, confidence=confidence)
    out = {"metric_a": a, "metric_b": b, **base, "value_a": fn(sa, y), "value_b": fn(sb, y),
           "difference": boot["difference"], "p_bootstrap": boot["p_value"], "diff_ci_low": boot["ci_low"],
           "diff_ci_high": boot["ci_high"], "p_williams": None, "t_williams": None}
    if target.statistic == "spearman":
        keep = ~np.isnan(y)  # the rows the two ρ are computed on (all, unless a target is undefined)
        r23 = spearman(sa[keep], sb[keep])
        if np.isfinite(r23) and np.isfinite(out["value_a"]) and np.isfinite(out["value_b"]) and keep.sum() > 3:
            w = williams_test(out["value_a"], out["value_b"], r23, int(keep.sum()))
            out.update(p_williams=w["p_value"], t_williams=w["t"], rho_ab=r23)
    return out


def pair_rows(decl: DatasetDeclaration, config: str, a: str, b: str, scored: dict[str, dict[str, Any]],
              targets: Sequence[Any], acc: dict[str, Any], *, n_resamples: int, seed: int, confidence: float) -> None:
    """The paired tests of metrics ``a`` and ``b`` on every target (or why there are none), appended to ``acc``."""
    sa, sb = (np.asarray(scored[m]["scores"], dtype=float) for m in (a, b))
    for t in targets:
        base = {"dataset": decl.name, "config": config, "target": t.name, "statistic": t.statistic}
        why = pair_left_out(a, b, sa, sb, t.values)
        if why:
            acc["left_out"].append({"metric_a": a, "metric_b": b, **base, "reason": why})
            continue
        pair = _pair_tests(a, b, sa, sb, t, base, n_resamples, seed, confidence)
        perm = (lq.permutation_p(t.statistic, sa, sb, t.values, n_resamples=n_resamples, seed=seed)
                if decl.protocol == "rated" else None)
        if perm is not None:
            pair.update(p_permutation=perm["p_value"], p_one_sided=perm["p_one_sided"])
        acc["pairs"].append(pair)
