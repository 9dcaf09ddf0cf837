"""Gradio's file cache, bounded by count and bytes.

Gradio copies every file an app returns (the results JSON) or receives (uploads) into its cache
(``GRADIO_TEMP_DIR``, default ``<tmp>/gradio``). ``delete_cache`` (:data:`dialeval.ui.serving.GRADIO_CACHE_SWEEP`)
removes them by age only, so a busy server still holds every file of the last ten minutes (a 30-minute soak left
15,076). :func:`start_sweeper` (called by :func:`dialeval.ui.serving.prepare`) adds a bound: every
:data:`SWEEP_PERIOD_S` seconds, the files each running app put in the cache are cut to at most
:data:`MAX_FILES` files and :data:`MAX_BYTES` bytes, oldest first (by ``st_ctime``, the copy time, as Gradio's own
sweep), never a file Gradio keeps (``keep_in_cache``: components' default values and examples) and never one younger
than :data:`GRACE_S` (it may still be being fetched). Between two sweeps the cache may exceed the bound by what
arrived in the last :data:`GRACE_S` + :data:`SWEEP_PERIOD_S` seconds. Only files the app itself tracks are
touched: another app sharing the cache folder keeps its files.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The most files one app keeps in Gradio's cache (oldest removed first).
MAX_FILES = 512
#: The most bytes one app keeps in Gradio's cache (oldest removed first).
MAX_BYTES = 256 * 2**20
#: A cached file younger than this (seconds) is never removed: its client may still be fetching it.
GRACE_S = 30.0
#: How often (seconds) the sweeper bounds the cache of every running app.
SWEEP_PERIOD_S = 10.0


@dataclass(frozen=True)
class CacheBound:
    """At most ``max_files`` files and ``max_bytes`` bytes, files younger than ``grace_s`` never removed."""

    max_files: int = MAX_FILES
    max_bytes: int = MAX_BYTES
    grace_s: float = GRACE_S

    def describe(self) -> str:
        return f"{self.max_files} files, {self.max_bytes / 2**20:.0f} MiB (files younger than {self.grace_s:g} s kept)"


def _stat(path: str) -> tuple[float, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ctime, st.st_size


def bound_files(paths: Iterable[str], bound: CacheBound | None = None, keep: Iterable[str] = ()) -> list[str]:
    """Remove the oldest of ``paths`` (by ``st_ctime``) until at most ``bound.max_files`` files and
    ``bound.max_bytes`` bytes remain, never one in ``keep`` nor one younger than ``bound.grace_s``; a folder left
    empty by a removal is removed too (Gradio puts each file in a folder named by its hash). Returns the removed
    paths (missing paths are ignored)."""
    bound, kept = bound or CacheBound(), set(keep)
    stamped = sorted((s[0], s[1], p) for p in set(paths) if (s := _stat(p)) is not None)
    count, size = len(stamped), sum(s for _, s, _ in stamped)
    cutoff = time.time() - bound.grace_s
    removed = []
    for ctime, nbytes, path in stamped:  # oldest first
        if count <= bound.max_files and size <= bound.max_bytes:
            break
        if path in kept or ctime > cutoff:
            continue
        try:
            os.remove(path)
        except FileNotFoundError:
            pass
        except OSError:
            continue
        count, size = count - 1, size - nbytes
        removed.append(path)
        try:
            Path(path).parent.rmdir()  # only when empty
        except OSError:
            pass
    return removed


def directory_usage(root: str | os.PathLike) -> tuple[int, int]:
    """(files, bytes) under ``root`` (0, 0 when it does not exist)."""
    files = nbytes = 0
    for dirpath, _, names in os.walk(root):
        for name in names:
            s = _stat(os.path.join(dirpath, name))
            if s is not None:
                files, nbytes = files + 1, nbytes + s[1]
    return files, nbytes


def bound_app_cache(demo: Any, bound: CacheBound | None = None) -> list[str]:
    """Bound the files ``demo`` (a ``gr.Blocks``) put in Gradio's cache (its ``temp_file_sets``) by
    ``bound`` (default ``demo.dialeval_cache_bound``, else :class:`CacheBound`); removed files leave the sets."""
    bound = bound or getattr(demo, "dialeval_cache_bound", None) or CacheBound()
    sets = list(getattr(demo, "temp_file_sets", []) or [])
    keep: set[str] = set()
    for block in list(getattr(demo, "blocks", {}).values()):
        keep.update(getattr(block, "keep_in_cache", set()) or ())
    tracked = [f for s in sets for f in list(s)]
    removed = set(bound_files(tracked, bound, keep))
    for s in sets:
        s.difference_update(removed)
    return sorted(removed)


_APPS: weakref.WeakSet[Any] = weakref.WeakSet()
_STARTED = threading.Event()
_LOCK = threading.Lock()


def _sweep_forever(period_s: float) -> None:
    while True:
        time.sleep(period_s)
        for demo in list(_APPS):
            if getattr(demo, "is_running", False):
                try:
                    bound_app_cache(demo)
                except Exception:  # noqa: BLE001 - a sweep that fails is retried next period; never kill the thread
                    continue


def start_sweeper(demo: Any, bound: CacheBound | None = None, period_s: float = SWEEP_PERIOD_S) -> None:
    """Bound ``demo``'s files in Gradio's cache every ``period_s`` seconds while it runs (one daemon thread per
    process serves every app registered here)."""
    demo.dialeval_cache_bound = bound or CacheBound()
    _APPS.add(demo)
    with _LOCK:
        if not _STARTED.is_set():
            threading.Thread(target=_sweep_forever, args=(period_s,), name="dialeval-cache-sweeper",
                             daemon=True).start()
            _STARTED.set()
