"""The leaderboard's score cache: a cached score is reused only when it was computed by the same metric (name,
options, model, dialeval version, the source of every package its code lives in, the content of every file or
folder an option names, :mod:`dialeval.meta.cache_key`) on the same rows (a SHA-256 of the rows as scored), with
the same installed versions of the libraries loaded when it was computed, and when the stored scores still match
the checksum written beside them. Anything else is rescored, and the log says why. Files are JSON objects,
written atomically; nothing is pickled. An entry that is a symbolic link, a FIFO or anything but a regular file is
refused (never opened, never written through), and so is a ``cache`` folder that is a symbolic link."""

from __future__ import annotations

import hashlib
import json
import math
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dialeval import registry
from dialeval._version import __version__
from dialeval.io.files import atomic_write_json
from dialeval.meta import cache_key, variants

Log = Callable[[str], None]
#: Why a key differs, per key field.
REASONS = {"rows": "the rows changed", "options": "an option changed", "model": "the model changed",
           "code": "the metric's code changed",
           "files": "a file an option names changed (e.g. the model's weights)", "version": "the dialeval version changed",
           "metric": "another metric", "dataset": "another dataset", "config": "another config"}


def fingerprint(obj: Any) -> str:
    """SHA-256 (first 16 hex digits) of ``obj`` as canonical JSON."""
    text = json.dumps(obj, sort_keys=True, default=str, ensure_ascii=False, allow_nan=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def metric_key(metric: str, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """What identifies ``metric``'s scores apart from the rows: name, options, model, version, the source of the
    packages of its declaration, adapter, core and module (the whole of each: a plugin's helper modules, the
    dialeval code its adapter calls) and the content of the files and folders its options name (a model folder)."""
    found = registry.meta_row(metric)
    if found is None:
        return {"metric": metric, "options": fingerprint(dict(options or {})), "version": __version__,
                "code": cache_key.code_digest([])}
    decl, _fixed = found
    options = variants.row_options(metric, options)
    modules = [decl.package] + [t.partition(":")[0] for t in (decl.meta_adapter, decl.core, decl.module) if t]
    model = options.get(decl.model_option) if decl.model_option else None
    if decl.model_option and model is None and decl.models:
        model = decl.models[0]
    named = {k: v for k, v in options.items() if _names_a_path(decl, k, v)}
    if decl.model_option and model:
        named[decl.model_option] = model
    return {"metric": metric, "options": fingerprint(options), "model": str(model) if model else None,
            "version": __version__, "code": cache_key.code_digest(modules),
            "files": fingerprint(cache_key.option_files(named))}


def _names_a_path(decl: registry.MetricDeclaration, name: str, value: Any) -> bool:
    """Whether option ``name`` may name a file or folder whose content the scores depend on: a declared path or
    model option, or a value that is a path (holds a separator) whatever its type."""
    kind = next((o.type for o in decl.options if o.name == name), "any")
    return kind in ("path", "model") or name == decl.model_option or (isinstance(value, str) and os.sep in value)


def scores_checksum(scores: list[float]) -> str:
    return hashlib.sha256(json.dumps([repr(float(x)) for x in scores]).encode("utf-8")).hexdigest()


def _open_entry(path: Path) -> str | None:
    """The text of the cache entry ``path``, ``None`` when there is none. A symbolic link, a FIFO or anything but a
    regular file is refused in one line: never opened (a FIFO would block), never followed, never replaced."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(mode):
        raise ValueError(f"cache entry {path} is a symbolic link; the cache holds only files the leaderboard wrote. "
                         "Remove the link, or choose another --out.")
    if not stat.S_ISREG(mode):
        raise ValueError(f"cache entry {path} is not a regular file (a FIFO, socket, device or folder); remove it, "
                         "or choose another --out.")
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as f:
        return f.read().decode("utf-8")


def _read(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """The stored entry, or ``(None, why it cannot be used)``; ``(None, None)`` when there is no file."""
    try:
        text = _open_entry(path)
        if text is None:
            return None, None
        stored = json.loads(text)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return None, f"cache file {path} is not readable JSON ({type(exc).__name__})"
    if not isinstance(stored, dict):
        return None, f"cache file {path} holds a JSON {type(stored).__name__}, not an object"
    scores = stored.get("scores")
    if not isinstance(scores, list) or not all(_finite(x) for x in scores):
        return None, f"cache file {path} holds scores that are not finite numbers"
    if stored.get("checksum") != scores_checksum(scores):
        return None, f"cache file {path}: its scores do not match their checksum (edited or damaged)"
    seconds = stored.get("seconds")
    if seconds is not None and not (_finite(seconds) and seconds >= 0):
        return None, f"cache file {path}: its 'seconds' is {seconds!r:.40}, not a number of seconds ≥ 0"
    libraries = stored.get("libraries")
    if not isinstance(libraries, dict) or not all(isinstance(v, str) for v in libraries.values()):
        return None, f"cache file {path} records no library versions (written by an older dialeval)"
    return stored, None


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _why_stale(stored_key: Any, key: dict[str, Any]) -> str:
    if not isinstance(stored_key, dict):
        return "the cache file has no key"
    changed = [REASONS.get(k, k) for k in key if stored_key.get(k) != key[k]]
    return ", ".join(dict.fromkeys(changed)) or "the key changed"


def cached(path: Path, key: dict[str, Any], n_rows: int, compute: Callable[[], dict[str, Any]], label: str,
           log: Log, write: Callable[[Path, Any], Any] | None = None) -> dict[str, Any]:
    """The scores under ``key`` from ``path`` when they are valid, else ``compute()`` stored there (atomically, by
    ``write``: default :func:`dialeval.io.files.atomic_write_json`); the log says ``cached``, or why it rescored."""
    stored, problem = _read(path)
    libraries = cache_key.changed_libraries(stored["libraries"]) if stored is not None else []
    if stored is not None and stored.get("key") == key and len(stored["scores"]) == n_rows and not libraries:
        log(f"{label}: cached")
        return stored
    if problem is None and stored is not None:
        problem = (_why_stale(stored.get("key"), key) if stored.get("key") != key
                   else "the row count changed" if len(stored["scores"]) != n_rows
                   else f"a library changed: {', '.join(libraries[:3])}")
    scored = compute()
    if problem:
        log(f"{label}: rescored ({problem})")
    out = {"key": key, "scores": [float(x) for x in scored["scores"]], "signature": scored.get("signature"),
           "seconds": round(scored.get("seconds") or 0, 2), "libraries": cache_key.loaded_libraries()}
    out["checksum"] = scores_checksum(out["scores"])
    (write or (lambda p, o: atomic_write_json(p, o, indent=None)))(path, out)
    return out


def check_cache_folder(folder: Path) -> None:
    """Refuse a ``cache`` path that is a symbolic link (entries would be written into whatever it points at), or
    that exists and is not a folder (before any scoring)."""
    if folder.is_symlink():
        raise ValueError(f"{folder} is a symbolic link; the leaderboard writes its cache entries only into a folder "
                         "of its own. Remove the link, or choose another --out.")
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{folder} is a file, not the cache folder; remove or rename it, or choose another --out.")
