"""Issue 21, "Gradio's cache bounded": the files an app leaves in Gradio's cache are cut to a count and a byte
bound, oldest first, never a kept file nor one younger than the grace (dialeval.ui.file_cache)."""

from __future__ import annotations

import os
import time

from dialeval.ui import file_cache, serving
from dialeval.ui.file_cache import CacheBound, bound_app_cache, bound_files, directory_usage


def _cache(root, n: int, size: int = 1000) -> list[str]:
    """``n`` files of ``size`` bytes, each in its own hash folder as Gradio stores them, created oldest first."""
    paths = []
    for i in range(n):
        folder = root / f"hash{i:03d}"
        folder.mkdir(parents=True)
        path = folder / f"dialeval-results-{i:03d}.json"
        path.write_bytes(b"x" * size)
        paths.append(str(path))
        time.sleep(0.005)  # distinct creation times (st_ctime orders them)
    return paths


def test_count_bound_keeps_the_newest_files(tmp_path):
    paths = _cache(tmp_path, 30)
    removed = bound_files(paths, CacheBound(max_files=10, max_bytes=10**9, grace_s=0))
    assert removed == paths[:20]
    assert directory_usage(tmp_path) == (10, 10 * 1000)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"hash{i:03d}" for i in range(20, 30)]  # emptied folders go


def test_byte_bound_keeps_the_newest_files(tmp_path):
    paths = _cache(tmp_path, 12, size=1000)
    bound_files(paths, CacheBound(max_files=100, max_bytes=4500, grace_s=0))
    assert directory_usage(tmp_path) == (4, 4000)
    assert all(os.path.exists(p) for p in paths[8:])


def test_kept_and_young_files_are_never_removed(tmp_path):
    paths = _cache(tmp_path, 6)
    bound_files(paths, CacheBound(max_files=2, max_bytes=10**9, grace_s=0), keep=[paths[0]])
    assert [os.path.exists(p) for p in paths] == [True, False, False, False, False, True]
    young = _cache(tmp_path / "young", 5)
    assert bound_files(young, CacheBound(max_files=1, max_bytes=1, grace_s=3600)) == []
    assert directory_usage(tmp_path / "young") == (5, 5000)


def test_only_the_apps_tracked_files_are_touched(tmp_path):
    class Block:
        keep_in_cache = set()

    class App:
        blocks = {1: Block()}

    tracked = _cache(tmp_path / "app", 8)
    other = _cache(tmp_path / "other", 3)  # another app's files in the same cache folder
    app = App()
    app.temp_file_sets = [set(tracked[:4]), set(tracked[4:])]
    app.blocks[1].keep_in_cache = {tracked[0]}
    removed = bound_app_cache(app, CacheBound(max_files=3, max_bytes=10**9, grace_s=0))
    assert removed == sorted(tracked[1:6])
    assert app.temp_file_sets == [{tracked[0]}, set(tracked[6:])]  # removed files leave Gradio's sets
    assert all(os.path.exists(p) for p in other)


def test_prepare_bounds_a_running_demo(monkeypatch, tmp_path):
    """A served demo: after 6 requests, one sweep leaves at most the bound of its results files in the cache."""
    from gradio_client import Client

    from dialeval.demo import build_demo, launch_options
    from dialeval.ui.blocks import api_parameters

    demo = build_demo(None, concurrency=1)
    assert demo in file_cache._APPS and demo.dialeval_cache_bound == CacheBound(512, 256 * 2**20, 30.0)
    demo.dialeval_cache_bound = CacheBound(max_files=2, max_bytes=10**9, grace_s=0)
    demo.launch(**launch_options(None, "127.0.0.1"), prevent_thread_lock=True, quiet=True)
    client = Client(demo.local_url, verbose=False, download_files=str(tmp_path / "client"))
    args = {p: False if p.startswith("use_") or p == "draw_plots" else "" for p in api_parameters()}
    args.update(responses="a b\nc d", use_distinct_n=True)
    try:
        for _ in range(6):
            client.predict(**args, api_name="/evaluate")

        def cached() -> list[str]:
            return [f for s in demo.temp_file_sets for f in s if os.path.basename(f).startswith("dialeval-results-")]

        assert len(cached()) == 6
        bound_app_cache(demo)
        assert len(cached()) == 2 and all(os.path.exists(f) for f in cached())
    finally:
        client.close()
        demo.close()
        serving._ACTIVE.clear()
