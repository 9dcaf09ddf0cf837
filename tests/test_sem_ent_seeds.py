"""Sem-Ent's ``seeds=`` option: mean ± sd of Sem-Ent over k-means restarts (the seed spread MAUVE users
asked about, krishnap25/mauve#11). Precomputed 2-d embeddings, so every value is checked by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dialeval.semantic.sem_ent import compute_sem_ent, restart_seeds, seed_spread
from dialeval.semantic.space import SemanticSpace


def test_restart_seeds():
    assert restart_seeds(3) == [27, 28, 29]  # the default seed first
    for bad in (1, 0, True, 2.0, "3"):
        with pytest.raises(ValueError, match="seeds"):
            restart_seeds(bad)


def test_seed_spread_on_well_separated_clusters_is_seed_free():
    # four tight groups of 5 points on the axes: any k = 4 clustering finds the groups, so every restart
    # gives the same distribution; predictions: 2 in one group, 1, 1 and 0 in the others →
    # −(0.5 ln 0.5 + 2 · 0.25 ln 0.25) = 1.5 ln 2 ≈ 1.0397
    rng = np.random.default_rng(0)
    centers = np.array([[10.0, 0.0], [0.0, 10.0], [-10.0, 0.0], [0.0, -10.0]])
    ref = np.concatenate([c + rng.normal(0, 0.01, (5, 2)) for c in centers])
    sp = SemanticSpace.from_embeddings(ref, 4)
    preds = np.array([[10.0, 0.1], [10.0, -0.1], [0.1, 10.0], [-10.0, 0.1]])
    out = seed_spread(sp, ref, preds, [27, 28, 29])
    assert out["seeds"] == [27, 28, 29]
    assert out["values"] == pytest.approx([1.5 * math.log(2)] * 3, abs=1e-12)
    assert out["mean"] == pytest.approx(1.5 * math.log(2), abs=1e-12) and out["sd"] == pytest.approx(0.0, abs=1e-12)


def test_mean_and_sd_are_the_sample_statistics():
    # a ring of 40 evenly spaced points has no preferred 3-way split: restarts differ; the summary is
    # recomputed here from the reported values (mean, ddof = 1)
    angles = np.linspace(0, 2 * np.pi, 40, endpoint=False)
    ref = np.stack([np.cos(angles), np.sin(angles)], axis=1)
    sp = SemanticSpace.from_embeddings(ref, 3)
    preds = ref[::3]
    out = seed_spread(sp, ref, preds, [27, 28, 29, 30, 31])
    v = out["values"]
    assert out["mean"] == pytest.approx(sum(v) / 5, abs=1e-12)
    assert out["sd"] == pytest.approx(math.sqrt(sum((x - sum(v) / 5) ** 2 for x in v) / 4), abs=1e-12)
    assert all(0 <= x <= math.log(3) + 1e-12 for x in v)


def test_seeds_need_reference_responses():
    from dialeval.resources import semantic_space_dir

    with pytest.raises(ValueError, match="reference_responses"):
        compute_sem_ent(["Hi ."], space=str(semantic_space_dir()), seeds=3)


def test_module_reports_the_spread_and_signs_it():
    import dialeval

    refs = ["Yes .", "No .", "Maybe later .", "I love pizza .", "Pasta is great .", "What time is it ?",
            "It is noon .", "See you tomorrow .", "Good night .", "Thanks a lot ."]
    preds = ["Yes , sure .", "I like pizza .", "Good night !", "It is late ."]
    out = dialeval.load("sem_ent").compute(predictions=preds, reference_responses=refs, k=3, seeds=3)
    spread = out["sem_ent_seeds"]
    assert spread["seeds"] == [27, 28, 29]
    assert spread["values"][0] == pytest.approx(out["sem_ent"], abs=1e-12)  # seed 27 is the default fit
    assert "|restarts:3|" in out["signature"]
    plain = dialeval.load("sem_ent").compute(predictions=preds, reference_responses=refs, k=3)
    assert "sem_ent_seeds" not in plain and "restarts" not in plain["signature"]
