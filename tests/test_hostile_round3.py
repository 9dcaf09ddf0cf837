"""Issue 36 and issue 33's faults 7, 9-11: silent wrong numbers and bypasses the earlier hostile passes missed.
Every test here failed before its fix."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dialeval.similarity.vendi import compute_vendi, hill_number

# ------------------------------------------------------------------------------------ 36.1 Vendi near q = 1


def _renyi_direct(p: np.ndarray, q: float) -> float:
    """exp(H_q) straight from the definition (valid away from q = 1 and for moderate q)."""
    return (np.sum(p ** q)) ** (1.0 / (1.0 - q))


@pytest.mark.parametrize("q", [np.arange(0.5, 1.6, 0.1)[5], 1 + 2 ** -52, 1 - 1e-15, 1 + 1e-15, 1 - 2 ** -53,
                               0.0, 0.5, 2.0, 500.0, 750.0, 1000.0, math.inf])
def test_vendi_five_disjoint_unigram_responses_is_five_for_every_q(q):
    out = compute_vendi([["alpha", "beta", "gamma", "delta", "omega"]], kernel="ngram", n=1, q=q)
    assert out["vendi_score"] == pytest.approx(5.0, rel=1e-12)


def test_vendi_fine_q_grid_is_monotone_and_bounded():
    rng = np.random.default_rng(7)
    p = rng.dirichlet(np.full(12, 0.4))
    near_one = [1 + k * 2.0 ** -52 for k in range(-64, 65)] + [1 + s * 10.0 ** -e for e in range(4, 17) for s in (-1, 1)]
    grid = np.unique(np.concatenate([np.linspace(0, 3, 3001), near_one, np.linspace(3, 1000, 400)]))
    values = np.array([hill_number(p, float(q)) for q in grid])
    assert np.all(values >= 1 - 1e-12) and np.all(values <= len(p) * (1 + 1e-12))
    assert np.all(np.diff(values) <= 1e-12 * values[:-1])  # VS_q never rises with q
    shannon = math.exp(-float(np.sum(p * np.log(p))))
    assert hill_number(p, 1.0) == pytest.approx(shannon, rel=1e-13)
    for q in (q for q in near_one if abs(q - 1) <= 1e-9):  # |dVS/dq| is O(VS) here, so within ~1e-9 relative
        assert hill_number(p, q) == pytest.approx(shannon, rel=1e-8)
    for q in (0.3, 0.9, 1.1, 2.0, 7.0):
        assert hill_number(p, q) == pytest.approx(_renyi_direct(p, q), rel=1e-10)
    assert hill_number(p, 1000.0) == pytest.approx(1 / p.max(), rel=1e-2)
    assert hill_number(p, math.inf) == pytest.approx(1 / p.max(), rel=1e-15)
