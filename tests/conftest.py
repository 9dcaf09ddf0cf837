import os

# Offline before anything imports huggingface_hub, datasets, evaluate or gradio.
for _key, _value in {
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_EVALUATE_OFFLINE": "1",
    "GRADIO_ANALYTICS_ENABLED": "False",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}.items():
    os.environ[_key] = _value

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SHARED = (REPO / ".." / "shared" / "data").resolve()


if os.environ.get("PYTEST_XDIST_WORKER"):  # two test processes on the machine's cores: one intra-op thread each
    import torch  # (ONNX Runtime sessions take torch's count); child processes keep their own default

    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The read-only real data beside the checkout (../shared/data)."""
    assert SHARED.is_dir(), f"{SHARED} is missing: the tests need ../shared/data beside the checkout"
    return SHARED


@pytest.fixture
def cached_routes(monkeypatch):
    """FULL and the LLM judge on their cached routes (shared contexts, hosts and guests on key/value caches)
    instead of the token-tree default, for the tests that look inside those routes."""
    from dialeval.full import tree as full_tree
    from dialeval.judge import scorer as judge_scorer

    monkeypatch.setattr(full_tree, "tree_route_fits", lambda lm, items, extra=0: False)
    monkeypatch.setattr(judge_scorer, "tree_route_fits", lambda lm, items, extra=0: False)


@pytest.fixture(scope="session")
def cluster(request) -> str:
    """The address of the session's 2-CPU Ray cluster on loopback (``ray_helpers.shared_cluster``): started as
    separate processes by the first test that asks, stopped by pid after the last one."""
    from ray_helpers import shared_cluster

    return shared_cluster(request.config)


def _onnxruntime_installed() -> bool:
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook, which reads the groups to name each test's scope
def pytest_collection_modifyitems(config, items):
    """``@pytest.mark.gpu`` tests are deselected (not skipped) where no CUDA GPU is visible, and
    ``@pytest.mark.onnx`` tests where onnxruntime is not installed (the torch fallback is tested either way); the
    rest get their pytest-xdist group (:func:`_group`), the Ray group first (:func:`_scheduled`)."""
    drop = []
    if any(item.get_closest_marker("gpu") for item in items):
        import torch

        if not torch.cuda.is_available():
            drop += [item for item in items if item.get_closest_marker("gpu")]
    if any(item.get_closest_marker("onnx") for item in items) and not _onnxruntime_installed():
        drop += [item for item in items if item.get_closest_marker("onnx")]
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = [item for item in items if item not in drop]
    # pytest-xdist (-n 2 --dist loadgroup): one worker takes each group, groups handed out in this order; the Ray
    # group, the longest, goes first so the other worker takes the rest meanwhile
    items[:] = _scheduled(items)
    users = [item for item in items if "cluster" in getattr(item, "fixturenames", ())]
    config.stash[_LAST_CLUSTER_TEST] = users[-1] if users else None
    for item in items:
        item.add_marker(pytest.mark.xdist_group(_group(item)))


def _group(item: pytest.Item) -> str:
    """Every Ray test in one group (one worker, one shared cluster, no two clusters at once); every other test
    with the rest of its file (module fixtures such as built Hub folders and Space venvs are made once)."""
    if item.path.name.startswith("test_distributed") or item.name.startswith("test_ray_"):
        return "ray"
    return item.path.name


def _scheduled(items: list) -> list:
    """``items`` with the Ray group first, every other test in collection order (a stable sort)."""
    return sorted(items, key=lambda item: _group(item) != "ray")


_LAST_CLUSTER_TEST = pytest.StashKey["pytest.Item | None"]()


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    """After the last test that uses the Ray cluster (and its fixtures' teardown), stop the cluster: its daemons
    would otherwise take CPU through the rest of the run."""
    if item is item.config.stash.get(_LAST_CLUSTER_TEST, None):
        from ray_helpers import stop_shared_cluster

        stop_shared_cluster()
