"""The resampling statistics computed many resamples at once equal straightforward loops written here: the same
seeded draws, each resample's statistic from scipy (Spearman, Kendall) or a plain formula (Pearson), with ties,
NaN targets, constant resamples and small blocks of resamples."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from scipy import stats as sps

from dialeval.meta import batched
from dialeval.meta.evaluation import STATISTICS
from dialeval.meta.stats import (
    bootstrap_interval,
    mean_over_datasets_interval,
    paired_bootstrap,
    paired_permutation,
    system_level_interval,
)

TOL = 1e-12


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    dx, dy = x - x.mean(), y - y.mean()
    denom = math.sqrt(float(np.dot(dx, dx)) * float(np.dot(dy, dy)))
    return float("nan") if denom == 0 else max(-1.0, min(1.0, float(np.dot(dx, dy)) / denom))


def _quiet(fn):
    def run(x, y):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return float(fn(x, y))
    return run


PLAIN = {"spearman": _quiet(lambda x, y: sps.spearmanr(x, y).statistic),
         "kendall": _quiet(lambda x, y: sps.kendalltau(x, y).statistic), "pearson": _pearson}


def _complete(name: str, x: np.ndarray, y: np.ndarray) -> float:
    """The statistic on the rows whose target is defined (all of them, or at least 3)."""
    keep = ~np.isnan(y)
    if keep.all():
        return PLAIN[name](x, y)
    return PLAIN[name](x[keep], y[keep]) if keep.sum() >= 3 else float("nan")


def _interval(values: list[float], confidence: float = 0.95) -> tuple[float, float, int]:
    ok = np.array([v for v in values if not math.isnan(v)])
    alpha = (1 - confidence) / 2
    low, high = np.quantile(ok, [alpha, 1 - alpha]) if len(ok) else (math.nan, math.nan)
    return float(low), float(high), len(values) - len(ok)


def _close(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= TOL


def _data(seed: int, n: int, nan_share: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(1, 4, size=n).astype(float)  # few values: many ties
    a = np.round(y + rng.normal(size=n), 1)
    b = np.round(rng.normal(size=n), 0)  # coarse: constant resamples happen on small n
    y[rng.random(n) < nan_share] = np.nan
    return a, b, y


@pytest.fixture(params=[10**6, 37], ids=["one block", "small blocks"])
def block(request, monkeypatch):
    monkeypatch.setattr(batched, "BLOCK_ELEMENTS", request.param)


CASES = [(seed, n, share) for seed, (n, share) in enumerate([(6, 0.0), (9, 0.4), (25, 0.0), (40, 0.3), (120, 0.1)])]


@pytest.mark.parametrize("name", ["spearman", "pearson", "kendall"])
@pytest.mark.parametrize(("seed", "n", "share"), CASES)
def test_subsample_interval_equals_a_loop(block, name, seed, n, share):
    a, _, y = _data(seed, n, share)
    got = bootstrap_interval(STATISTICS[name], [a, y], n_resamples=150, fraction=0.5, seed=seed)
    idx = np.argsort(np.random.default_rng(seed).random((150, n)), axis=1)[:, : max(2, n // 2)]
    low, high, undefined = _interval([_complete(name, a[r], y[r]) for r in idx])
    assert _close(got["low"], low) and _close(got["high"], high) and got["undefined"] == undefined


@pytest.mark.parametrize("name", ["spearman", "pearson", "kendall"])
@pytest.mark.parametrize(("seed", "n", "share"), CASES)
def test_paired_bootstrap_equals_a_loop(block, name, seed, n, share):
    a, b, y = _data(seed, n, share)
    got = paired_bootstrap(STATISTICS[name], a, b, y, n_resamples=120, seed=seed + 1)
    observed = _complete(name, a, y) - _complete(name, b, y)
    idx = np.random.default_rng(seed + 1).integers(0, n, size=(120, n))
    d = np.array([_complete(name, a[r], y[r]) - _complete(name, b[r], y[r]) for r in idx])
    d = d[~np.isnan(d)]
    assert _close(got["difference"], observed) and got["resamples"] == len(d)
    if len(d) and not math.isnan(observed):
        assert _close(got["p_value"], (1 + np.sum(np.abs(d - observed) >= abs(observed))) / (1 + len(d)))
        assert _close(got["ci_low"], float(np.quantile(d, 0.025)))
        assert _close(got["ci_high"], float(np.quantile(d, 0.975)))


@pytest.mark.parametrize("name", ["spearman", "pearson", "kendall"])
@pytest.mark.parametrize(("seed", "n", "share"), CASES)
def test_permutation_test_equals_scipys(block, name, seed, n, share):
    """n = 6 enumerates every swap pattern (2^n ≤ resamples), as scipy does; larger n draw them."""
    a, b, y = _data(seed, n, share)
    got = paired_permutation(STATISTICS[name], a, b, y, n_resamples=300, seed=seed)
    za, zb = ((v - v.mean()) / (v.std() or 1.0) for v in (a, b))
    observed = _complete(name, za, y) - _complete(name, zb, y)
    assert _close(got["difference"], observed)
    if math.isnan(observed):
        return
    ref = sps.permutation_test((za, zb), lambda u, v: _complete(name, u, y) - _complete(name, v, y),
                               permutation_type="samples", n_resamples=300, random_state=seed, vectorized=False)
    assert _close(got["p_value"], float(ref.pvalue))
    null = np.asarray(ref.null_distribution)
    gamma = abs(np.finfo(float).eps * 100 * observed)
    hits = null >= observed - gamma if observed > 0 else null <= observed + gamma
    assert _close(got["p_one_sided"], min(1.0, (int(hits.sum()) + 1) / (len(null) + 1)))


def _mean_pair(s: np.ndarray, h: np.ndarray) -> tuple[float, float]:
    keep = ~np.isnan(h)
    return (s[keep].mean(), h[keep].mean()) if keep.any() else (math.nan, math.nan)


def _system_loop(name: str, s: np.ndarray, h: np.ndarray, systems: list[str], n_resamples: int, seed: int,
                 items: bool = True) -> list[float]:
    """Systems drawn with replacement, then (``items``) each drawn slot's items drawn within its system: the picks
    matrix first, then per system (sorted) one item row per slot that picked it, slots in row-major order."""
    g = np.array(systems)
    strata = [np.flatnonzero(g == k) for k in sorted(set(systems))]
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, len(strata), size=(n_resamples, len(strata)))
    means = {}
    for j, rows in enumerate(strata):
        for b, k in zip(*np.nonzero(pick == j)):
            drawn = rows[rng.integers(0, len(rows), size=len(rows))] if items else rows
            means[(b, k)] = _mean_pair(s[drawn], h[drawn])
    out = []
    for b in range(n_resamples):
        ms = np.array([means[(b, k)][0] for k in range(len(strata))])
        mh = np.array([means[(b, k)][1] for k in range(len(strata))])
        keep = ~(np.isnan(ms) | np.isnan(mh))
        out.append(_complete(name, ms[keep], mh[keep]) if keep.sum() >= 3 else math.nan)
    return out


@pytest.mark.parametrize("name", ["spearman", "pearson", "kendall"])
@pytest.mark.parametrize(("seed", "n_systems", "share"), [(0, 3, 0.0), (1, 4, 0.5), (2, 7, 0.2)])
@pytest.mark.parametrize("resample", ["systems and items", "systems"])
def test_system_level_interval_equals_a_loop(block, name, seed, n_systems, share, resample):
    a, _, y = _data(seed, 40, share)
    systems = [f"sys{k % n_systems}" for k in range(40)]
    got = system_level_interval(STATISTICS[name], a, y, systems, n_resamples=80, seed=seed, resample=resample)
    low, high, undefined = _interval(_system_loop(name, a, y, systems, 80, seed, items=resample != "systems"))
    assert _close(got["low"], low) and _close(got["high"], high) and got["undefined"] == undefined


@pytest.mark.parametrize("seed", [0, 3])
def test_mean_over_datasets_interval_equals_a_loop(block, seed):
    data = [_data(seed + k, n, share)[::2] for k, (n, share) in enumerate([(8, 0.0), (30, 0.3), (15, 0.0)])]
    got = mean_over_datasets_interval(STATISTICS["spearman"], data, n_resamples=90, seed=seed)
    rng = np.random.default_rng(seed)
    means = []
    for _ in range(90):
        vals = []
        for k in rng.integers(0, len(data), size=len(data)):
            s, h = data[k]
            row = rng.integers(0, len(s), size=len(s))
            vals.append(_complete("spearman", s[row], h[row]))
        vals = [v for v in vals if not math.isnan(v)]
        if vals:
            means.append(float(np.mean(vals)))
    low, high = np.quantile(means, [0.025, 0.975])
    assert _close(got["low"], float(low)) and _close(got["high"], float(high))
    assert _close(got["value"], float(np.mean([_complete("spearman", s, h) for s, h in data])))


def test_row_helpers_equal_brute_force():
    rng = np.random.default_rng(9)
    a = rng.integers(0, 6, size=(7, 30))
    pairs = [sum(int(r[i] > r[j]) for i, j in itertools.combinations(range(30), 2)) for r in a]
    assert batched.inversions_rows(a).tolist() == pairs
    codes, n_codes = batched.dense_codes(a.reshape(-1).astype(float))
    ranks = batched.ranks_from_codes(codes.reshape(a.shape), n_codes)
    assert np.array_equal(ranks, np.array([sps.rankdata(r) for r in a]))
    assert np.array_equal(batched.average_ranks_rows(a.astype(float)), ranks)


def test_a_block_stays_bounded_for_ten_thousand_items():
    rows = batched.block_rows(10_000, 1000)
    assert rows * 10_000 * 8 * 12 <= 200 * 2**20  # ~12 temporaries of 8 bytes per element
    assert sum(batched.blocks(1000, 10_000)) == 1000
