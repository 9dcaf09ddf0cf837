"""What a cached score depends on besides its rows and options, as fingerprints the score cache compares
(:mod:`dialeval.meta.cache`): the source files of every package the metric's code lives in (the whole installed
``dialeval`` package, a plugin's whole package: its helper modules too), the content of every file or folder an
option names (a model folder, a fitted space: new weights in the same folder are a new key), the Hub snapshot a
model id resolves to in the local cache, and the installed versions of the libraries loaded when the scores were
computed (a ``sacrebleu`` or ``bert-score`` upgrade is a new key).

File contents are hashed once per process and file state (path, size, modification time, inode): a rerun of a
unit on an unchanged multi-gigabyte model folder stats its files and hashes nothing again.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

_FILES: dict[tuple[str, int, int, int], str] = {}
_VERSIONS: dict[str, str] | None = None
_MODULE_DISTS: dict[str, list[str]] | None = None
_SKIP_DIRS = {"__pycache__", ".git", ".mypy_cache", ".pytest_cache", ".ruff_cache"}


def file_digest(path: str | os.PathLike) -> str:
    """SHA-256 (first 16 hex digits) of a file's bytes, memoised by its path, size, modification time and inode."""
    st = os.stat(path)
    key = (os.fspath(path), st.st_size, st.st_mtime_ns, st.st_ino)
    found = _FILES.get(key)
    if found is None:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        found = _FILES[key] = h.hexdigest()[:16]
    return found


def tree_digest(root: str | os.PathLike) -> str:
    """A fingerprint of a file, or of every file under a folder (relative path and content; caches and compiled
    files left out): any edit, addition or removal changes it."""
    root = Path(root)
    if root.is_file():
        return file_digest(root)
    h = hashlib.sha256()
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        for name in sorted(files):
            if name.endswith((".pyc", ".pyo")):
                continue
            path = os.path.join(folder, name)
            if not os.path.isfile(path):
                continue
            h.update(os.path.relpath(path, root).encode("utf-8", "surrogateescape") + b"\0")
            h.update(file_digest(path).encode() + b"\0")
    return h.hexdigest()[:16]


def package_root(module: str) -> Path | None:
    """The folder (or file) of a module's top-level package: what a change anywhere in it can reach."""
    return module_folder(module.partition(".")[0]) if module.partition(".")[0] else None


def module_folder(module: str) -> Path | None:
    """The folder of package ``module``, the file of a plain module, ``None`` when it cannot be found."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    locations = list(spec.submodule_search_locations or [])
    if locations:
        return Path(locations[0])
    return Path(spec.origin) if spec.origin and Path(spec.origin).is_file() else None


def code_digest(modules: list[str]) -> str:
    """A fingerprint of the source of every top-level package among ``modules`` (always ``dialeval`` itself: a
    metric's adapter calls the library's shared code) and of each module's own folder or file (a subpackage that
    lives outside its parent's folder, as the built-in metrics' folders do)."""
    found = [package_root(m) for m in ["dialeval", *modules]] + [module_folder(m) for m in modules if m]
    roots = {str(r): r for r in found if r is not None}
    h = hashlib.sha256()
    for name in sorted(roots):
        h.update(name.encode("utf-8", "surrogateescape") + b"\0" + tree_digest(roots[name]).encode() + b"\0")
    return h.hexdigest()[:16]


def _hub_snapshot(name: str) -> str | None:
    """The commit a Hub model id resolves to in the local Hub cache, or ``None`` (not a cached Hub id)."""
    if not re.fullmatch(r"[A-Za-z0-9][\w.-]*(/[\w.-]+)?", name):
        return None
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(name, "config.json")
    except Exception:  # noqa: BLE001 - no Hub library or a name it refuses: nothing cached to follow
        return None
    return Path(found).parent.name if isinstance(found, str) else None


def option_files(options: dict[str, Any]) -> dict[str, str]:
    """``{option: fingerprint}`` of every option naming an existing file or folder (a model folder, a space) by
    its content, or a Hub id by its cached snapshot."""
    out: dict[str, str] = {}
    for name, value in sorted(options.items()):
        values = value if isinstance(value, (list, tuple)) else [value]
        prints = []
        for v in values:
            if not isinstance(v, str) or not v.strip() or "\0" in v:
                continue
            path = Path(v.strip()).expanduser()
            try:
                exists = path.exists()
            except OSError:
                exists = False
            if exists:
                prints.append(tree_digest(path))
            elif (snap := _hub_snapshot(v.strip())) is not None:
                prints.append(f"hub:{snap}")
        if prints:
            out[name] = ",".join(prints)
    return out


def installed_versions() -> dict[str, str]:
    """``{distribution: version}`` of every installed distribution (read once per process)."""
    global _VERSIONS
    if _VERSIONS is None:
        found: dict[str, str] = {}
        for dist in metadata.distributions():
            name = dist.metadata.get("Name") if dist.metadata else None
            if name:
                found.setdefault(_normal(name), dist.version)
        _VERSIONS = found
    return _VERSIONS


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def loaded_libraries() -> dict[str, str]:
    """``{distribution: version}`` of the installed libraries whose modules this process has loaded: what the
    scores just computed may depend on (a superset: every library loaded so far)."""
    global _MODULE_DISTS
    if _MODULE_DISTS is None:
        _MODULE_DISTS = metadata.packages_distributions()
    versions = installed_versions()
    tops = {m.partition(".")[0] for m in list(sys.modules)}
    dists = {_normal(d) for t in tops for d in _MODULE_DISTS.get(t, ())}
    return {d: versions[d] for d in sorted(dists) if d in versions}


def changed_libraries(stored: dict[str, str]) -> list[str]:
    """The libraries of ``stored`` (``{distribution: version}``) whose installed version differs now, as
    ``"name 1.0 → 2.0"`` (``→ absent`` when uninstalled)."""
    now = installed_versions()
    return [f"{d} {v} → {now.get(d, 'absent')}" for d, v in sorted(stored.items()) if now.get(d) != v]
