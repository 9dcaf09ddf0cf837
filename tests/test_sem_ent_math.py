"""Sem-Ent / DRESS math without any model: hand-computed values and the reference pipeline."""

import math

import numpy as np
import pytest

from dialeval.semantic.dress import cluster_weights, dress_weights, head_clusters, negative_flags
from dialeval.semantic.space import (
    SemanticSpace,
    agreement,
    assign_nearest,
    cluster_distribution,
    cluster_examples,
    components_for_variance,
    entropy_nats,
    fit_kmeans,
    fit_pca,
    l2_normalize,
)


def blobs(n_per: int = 60, centers: int = 5, dim: int = 16, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    means = rng.normal(0, 5, size=(centers, dim))
    truth = np.repeat(np.arange(centers), n_per)
    return (means[truth] + rng.normal(0, 0.3, size=(len(truth), dim))).astype(np.float32), truth


def test_components_for_variance_first_index_reaching_threshold():
    # cumulative: 0.5, 0.75, 0.875, 1.0 (exact in binary)
    assert components_for_variance([0.5, 0.25, 0.125, 0.125], 0.75) == 2  # equality counts
    assert components_for_variance([0.5, 0.25, 0.125, 0.125], 0.8) == 3
    assert components_for_variance([0.5, 0.25, 0.125, 0.125], 0.5) == 1
    assert components_for_variance([0.5, 0.2], 0.9) == 2  # never reached: keep all
    with pytest.raises(ValueError, match="variance"):
        components_for_variance([1.0], 0.0)


def test_entropy_in_nats_by_hand():
    assert entropy_nats([0.5, 0.5]) == pytest.approx(math.log(2), abs=1e-15)
    assert entropy_nats([1.0, 0.0, 0.0]) == 0.0
    assert entropy_nats([0.25, 0.25, 0.5]) == pytest.approx(1.5 * math.log(2), abs=1e-15)
    assert entropy_nats([0.05] * 20) == pytest.approx(math.log(20), abs=1e-12)
    with pytest.raises(ValueError):
        entropy_nats([])
    with pytest.raises(ValueError):
        entropy_nats([0.5, -0.1])


def test_entropy_matches_scipy_reference():
    from scipy.stats import entropy

    p = np.random.default_rng(1).dirichlet(np.ones(20))
    assert entropy_nats(p) == pytest.approx(float(entropy(p)), abs=1e-12)


def test_cluster_distribution_and_examples():
    assert cluster_distribution([0, 0, 1, 3], 4).tolist() == [0.5, 0.25, 0.0, 0.25]
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        cluster_distribution([0, 3], 3)
    with pytest.raises(ValueError):
        cluster_distribution([], 3)
    ex = cluster_examples(["a", "b", "a", "c", "d"], [0, 1, 0, 0, 0], 3, per_cluster=2)
    assert ex == [["a", "c"], ["b"], []]
    assert agreement([0, 1, 2, 3], [0, 1, 0, 3]) == 0.75


def test_l2_normalize_keeps_zero_rows():
    out = l2_normalize(np.array([[3.0, 4.0], [0.0, 0.0]]))
    assert out.tolist() == [[0.6, 0.8], [0.0, 0.0]]


def test_pca_keeps_one_component_for_points_on_a_line():
    rng = np.random.default_rng(0)
    t = rng.normal(size=(200, 1))
    x = (t @ np.array([[1.0, 2.0, 2.0]]) / 3 + rng.normal(0, 1e-3, size=(200, 3))).astype(np.float32)
    pca = fit_pca(x, 0.9, 26)
    assert pca.components.shape == (1, 3)
    assert abs(abs(pca.components[0] @ np.array([1.0, 2.0, 2.0]) / 3) - 1) < 1e-4
    # the projection is the centred coordinate along the line (up to sign)
    proj = pca.project(x)[:, 0]
    assert abs(np.corrcoef(proj, t[:, 0])[0, 1]) > 0.9999


def test_kmeans_separates_blobs_and_is_deterministic():
    x, truth = blobs()
    c1 = fit_kmeans(x, 5, niter=50, nredo=2, seed=27)
    c2 = fit_kmeans(x, 5, niter=50, nredo=2, seed=27)
    assert np.array_equal(c1, c2)
    labels = assign_nearest(x, c1)
    # a perfect partition: each true blob maps to exactly one cluster and vice versa
    pairs = set(zip(truth.tolist(), labels.tolist()))
    assert len(pairs) == 5 and len({p[1] for p in pairs}) == 5


def test_space_matches_reference_pipeline():
    """The reference (mauve's cluster_feats_single as used by hyperconnect/sem-ent): sklearn normalize,
    PCA(random_state=26).transform[:, :idx+1], faiss Kmeans(niter=500, nredo=5, seed=27), index.search."""
    import faiss
    from sklearn.decomposition import PCA
    from sklearn.preprocessing import normalize

    x, _ = blobs(n_per=40, centers=6, dim=24, seed=3)
    data = normalize(x, norm="l2", axis=1)
    pca = PCA(n_components=None, whiten=False, random_state=26).fit(data)
    idx = np.argmax(np.cumsum(pca.explained_variance_ratio_) >= 0.9)
    data = pca.transform(data)[:, : idx + 1].astype(np.float32)
    km = faiss.Kmeans(data.shape[1], 6, niter=500, verbose=False, nredo=5, update_index=True, seed=27)
    km.train(data)
    _, ref_labels = km.index.search(data, 1)

    space = SemanticSpace.from_embeddings(x, 6)
    assert space.config["kept_components"] == idx + 1
    assert np.array_equal(space.reference_labels, ref_labels.reshape(-1))
    np.testing.assert_allclose(space.centroids, km.centroids, atol=1e-5)
    from scipy.stats import entropy

    ref_hist = np.histogram(ref_labels.reshape(-1), bins=6, range=[0, 6], density=True)[0]
    assert space.reference_sem_ent == pytest.approx(float(entropy(ref_hist / ref_hist.sum())), abs=1e-12)


def test_space_save_load_round_trip(tmp_path):
    x, _ = blobs(seed=5)
    texts = [f"response {i}" for i in range(len(x))]
    space = SemanticSpace.from_embeddings(x, 5, texts=texts, encoder_name="precomputed")
    space.save(tmp_path / "sp")
    loaded = SemanticSpace.load(tmp_path / "sp")
    assert loaded.fingerprint == space.fingerprint
    assert loaded.config == space.config
    np.testing.assert_array_equal(loaded.assign_embeddings(x), space.assign_embeddings(x))
    np.testing.assert_array_equal(loaded.reference_labels, space.reference_labels)
    assert loaded.reference_examples == space.reference_examples
    assert sorted(p.name for p in (tmp_path / "sp").iterdir()) == ["space.json", "space.safetensors"]
    # a precomputed space cannot embed text
    with pytest.raises(ValueError, match="precomputed"):
        loaded.assign(["hello"])
    # dimension mismatch is a clear error
    with pytest.raises(ValueError, match="expects"):
        loaded.assign_embeddings(np.zeros((2, 3), dtype=np.float32))


def test_space_load_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="fit-space"):
        SemanticSpace.load(tmp_path)
    x, _ = blobs(seed=6)
    SemanticSpace.from_embeddings(x, 5).save(tmp_path / "a")
    SemanticSpace.from_embeddings(x + 1, 5).save(tmp_path / "b")
    (tmp_path / "a" / "space.safetensors").write_bytes((tmp_path / "b" / "space.safetensors").read_bytes())
    with pytest.raises(ValueError, match="corrupt"):
        SemanticSpace.load(tmp_path / "a")


def test_k_larger_than_distinct_references_is_an_error():
    x = np.tile(np.eye(3, 8, dtype=np.float32), (5, 1))  # 15 rows, 3 distinct
    with pytest.raises(ValueError, match="at least 4 distinct"):
        SemanticSpace.from_embeddings(x, 4)
    with pytest.raises(ValueError, match="≥ 2"):
        SemanticSpace.from_embeddings(x, 1)


def test_dress_weights_by_hand():
    np.testing.assert_allclose(cluster_weights([0.5, 0.25, 0.25], gamma=2), [0.25, 0.5625, 0.5625])
    np.testing.assert_allclose(dress_weights([0, 2, 1, 0], [0.5, 0.25, 0.25], gamma=2),
                               [0.25, 0.5625, 0.5625, 0.25])
    assert cluster_weights([0.1])[0] == pytest.approx(0.9 ** 30, rel=1e-15)  # γ = 30 by default
    assert cluster_weights([0.0, 1.0]).tolist() == [1.0, 0.0]
    with pytest.raises(ValueError, match="gamma"):
        cluster_weights([0.5, 0.5], gamma=-1)
    with pytest.raises(ValueError):
        dress_weights([3], [0.5, 0.5])


def test_head_cluster_flags_by_hand():
    # the reference code's rule: strictly above 0.1
    assert head_clusters([0.1, 0.15, 0.75], "share>0.1") == [1, 2]
    labels = [0] * 8 + [1, 2]  # shares 0.8, 0.1, 0.1
    assert negative_flags(labels, 3, "share>0.1").tolist() == [-1.0] * 8 + [0.0, 0.0]
    assert negative_flags(labels, 3, "share>0.05").tolist() == [-1.0] * 10


def test_head_top5_is_the_papers_five_most_frequent_clusters():
    # shares of 8 clusters, by hand: the five largest are 0 (0.3), 2 (0.2), then three of the four 0.1s by index
    p = [0.3, 0.0, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1]
    assert head_clusters(p) == head_clusters(p, "top5") == [0, 2, 3, 4, 5]
    assert head_clusters(p, "top2") == [0, 2]
    assert head_clusters([0.5, 0.5, 0.0]) == [0, 1]  # an empty cluster is never a head
    # flat shares below 0.1 (like DailyDialog's 20 clusters): share>0.1 flags nothing, top5 flags 5 of 20 clusters
    flat = [0.05] * 20
    assert head_clusters(flat, "share>0.1") == []
    labels = [j for j in range(20) for _ in range(3)]
    assert negative_flags(labels, 20).tolist() == [-1.0] * 15 + [0.0] * 45


@pytest.mark.parametrize("bad", ["top0", "top", "share>1", "share>1.5", "share>-0.1", "share", "top5 ", "5", 5, None,
                                 True])
def test_head_rule_refused_in_one_line(bad):
    with pytest.raises(ValueError, match=r"head=.*top5.*share>0\.1"):
        head_clusters([0.5, 0.5], bad)


def test_kmeans_keeps_faiss_subsampling_of_256_points_per_centroid():
    import faiss

    x, _ = blobs(n_per=50, centers=2, dim=4, seed=7)  # 100 points, k = 2
    sub = fit_kmeans(x, 2, niter=20, nredo=1, seed=27, max_points_per_centroid=5)  # faiss trains on 10 of them
    km = faiss.Kmeans(4, 2, niter=20, nredo=1, seed=27, max_points_per_centroid=5)
    km.train(x)
    np.testing.assert_array_equal(sub, km.centroids)
    full = fit_kmeans(x, 2, niter=20, nredo=1, seed=27)  # default 256 per centroid: all 100 points
    assert not np.allclose(np.sort(sub, axis=0), np.sort(full, axis=0))
    space = SemanticSpace.from_embeddings(np.tile(x, (6, 1)) + np.arange(600)[:, None] * 1e-3, 2)
    assert space.config["max_points_per_centroid"] == 256 and space.config["kmeans_training_points"] == 512
