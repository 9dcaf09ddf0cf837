"""The leaderboard's score cache: a cached score is reused only when it was computed by the same metric (name,
options, model, dialeval version and the source of the metric's own modules) on the same rows (a SHA-256 of
the rows as scored), and when the stored scores still match the checksum written beside them. Anything else
is rescored, and the log says why. Files are JSON objects, written atomically; nothing is pickled."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dialeval import registry
from dialeval._version import __version__
from dialeval.io.files import atomic_write_json

Log = Callable[[str], None]
#: Why a key differs, per key field.
REASONS = {"rows": "the rows changed", "options": "an option changed", "model": "the model changed",
           "code": "the metric's code changed", "version": "the dialeval version changed",
           "metric": "another metric", "dataset": "another dataset", "config": "another config"}


def fingerprint(obj: Any) -> str:
    """SHA-256 (first 16 hex digits) of ``obj`` as canonical JSON."""
    text = json.dumps(obj, sort_keys=True, default=str, ensure_ascii=False, allow_nan=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _module_sources(names: list[str]) -> str:
    """A fingerprint of the source files of ``names`` (modules or packages' ``__init__``)."""
    h = hashlib.sha256()
    for name in sorted(set(names)):
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        origin = getattr(spec, "origin", None)
        if origin and Path(origin).is_file():
            h.update(name.encode() + b"\0" + Path(origin).read_bytes())
    return h.hexdigest()[:16]


def metric_key(metric: str, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """What identifies ``metric``'s scores apart from the rows: name, options, model, version and the source of
    its declaration, adapter and core modules (so a changed plugin is rescored even at the same version)."""
    found = registry.meta_row(metric)
    if found is None:
        return {"metric": metric, "options": fingerprint(dict(options or {})), "version": __version__}
    decl, fixed = found
    options = {**fixed, **(options or {})}
    modules = [decl.package] + [t.partition(":")[0] for t in (decl.meta_adapter, decl.core, decl.module) if t]
    model = options.get(decl.model_option) if decl.model_option else None
    if decl.model_option and model is None and decl.models:
        model = decl.models[0]
    return {"metric": metric, "options": fingerprint(options), "model": str(model) if model else None,
            "version": __version__, "code": _module_sources(modules)}


def scores_checksum(scores: list[float]) -> str:
    return hashlib.sha256(json.dumps([repr(float(x)) for x in scores]).encode("utf-8")).hexdigest()


def _read(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """The stored entry, or ``(None, why it cannot be used)``; ``(None, None)`` when there is no file."""
    if not path.exists():
        return None, None
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return None, f"cache file {path} is not readable JSON ({type(exc).__name__})"
    if not isinstance(stored, dict):
        return None, f"cache file {path} holds a JSON {type(stored).__name__}, not an object"
    scores = stored.get("scores")
    if not isinstance(scores, list) or not all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                               and math.isfinite(x) for x in scores):
        return None, f"cache file {path} holds scores that are not finite numbers"
    if stored.get("checksum") != scores_checksum(scores):
        return None, f"cache file {path}: its scores do not match their checksum (edited or damaged)"
    return stored, None


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
    if stored is not None and stored.get("key") == key and len(stored["scores"]) == n_rows:
        log(f"{label}: cached")
        return stored
    if problem is None and stored is not None:
        problem = _why_stale(stored.get("key"), key) if stored.get("key") != key else "the row count changed"
    scored = compute()
    if problem:
        log(f"{label}: rescored ({problem})")
    out = {"key": key, "scores": [float(x) for x in scored["scores"]], "signature": scored.get("signature"),
           "seconds": round(scored.get("seconds") or 0, 2)}
    out["checksum"] = scores_checksum(out["scores"])
    (write or (lambda p, o: atomic_write_json(p, o, indent=None)))(path, out)
    return out


def check_cache_folder(folder: Path) -> None:
    """Refuse a ``cache`` path that exists and is not a folder (before any scoring)."""
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{folder} is a file, not the cache folder; remove or rename it, or choose another --out.")
