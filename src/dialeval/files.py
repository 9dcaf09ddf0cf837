"""One way to write files: every output goes to a temporary sibling and is renamed into place, so a crash,
a kill or a full disk never leaves half a file (or half a folder) where a reader would take it for whole.

- :func:`atomic_write_bytes` / :func:`atomic_write_text` / :func:`atomic_write_json` / :func:`atomic_write_lines`
  for single files;
- :func:`atomic_directory` for a folder (a dataset export, a semantic space): the caller writes into a
  temporary sibling, its card/metadata last, and the folder is renamed into place only when the block ends
  without an error;
- :func:`check_output_path` refuses, before any work is done, an output that is an input, a directory where
  a file is expected, an existing file where a folder is expected, or a folder that cannot be written.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _parent(path: Path) -> Path:
    parent = path.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OSError(f"cannot create the folder {str(parent)!r} for {str(path)!r}: {exc.strerror or exc}.") from None
    return parent


def _write_via_temp(path: str | os.PathLike, write: Any, *, binary: bool) -> Path:
    out = Path(path)
    if out.is_dir():
        raise IsADirectoryError(f"output {str(out)!r} is a directory; give a file name, e.g. {str(out / 'out.json')!r}.")
    parent = _parent(out)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=parent)
    except OSError as exc:
        raise PermissionError(f"cannot write {str(out)!r}: {exc.strerror or exc}.") from None
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the file the usual permissions
        mode = "wb" if binary else "w"
        with os.fdopen(fd, mode, **({} if binary else {"encoding": "utf-8", "newline": ""})) as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return out


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file in the same folder and ``os.replace``."""
    return _write_via_temp(path, lambda f: f.write(data), binary=True)


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write UTF-8 ``text`` atomically (see :func:`atomic_write_bytes`); newlines are written as given."""
    return _write_via_temp(path, lambda f: f.write(text), binary=False)


def json_text(obj: Any, *, indent: int | None = 2) -> str:
    """JSON with non-ASCII kept readable; a lone surrogate (not encodable as UTF-8) is written escaped."""
    text = json.dumps(obj, indent=indent, ensure_ascii=False, allow_nan=True)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(obj, indent=indent, ensure_ascii=True, allow_nan=True)
    return text


def atomic_write_json(path: str | os.PathLike, obj: Any, *, indent: int | None = 2) -> Path:
    """``obj`` as JSON (plus a final newline), written atomically."""
    return atomic_write_text(path, json_text(obj, indent=indent) + "\n")


def atomic_write_lines(path: str | os.PathLike, rows: Iterable[Any]) -> Path:
    """JSON Lines (one object per line, ``\\n`` only), written atomically."""
    def write(f: Any) -> None:
        for row in rows:
            f.write(json_text(row, indent=None) + "\n")

    return _write_via_temp(path, write, binary=False)


@contextlib.contextmanager
def atomic_directory(target: str | os.PathLike, *, overwrite: bool = True) -> Iterator[Path]:
    """Yield a temporary sibling folder of ``target``; when the block succeeds it replaces ``target``.

    Write the folder's card or metadata last: a folder left behind by a kill is a hidden ``.NAME.tmp-*``
    sibling without one, never ``target``. An existing ``target`` folder is replaced (``overwrite``) only
    after the new one is complete; an existing file at ``target`` is refused.
    """
    out = Path(target)
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"{str(out)!r} is a file; the output must be a folder (a new or existing directory).")
    if out.is_dir() and not overwrite and any(out.iterdir()):
        raise FileExistsError(f"{str(out)!r} exists and is not empty.")
    parent = _parent(out)
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=parent))
    except OSError as exc:
        raise PermissionError(f"cannot write into {str(parent)!r}: {exc.strerror or exc}.") from None
    os.chmod(tmp, 0o777 & ~_umask())
    try:
        yield tmp
        old = None
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=parent))
            os.replace(out, old / "previous")
        os.replace(tmp, out)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _same(a: Path, b: Path) -> bool:
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def check_output_path(path: str | os.PathLike, *, inputs: Sequence[str | os.PathLike | None] = (),
                      kind: str = "file", option: str = "--output") -> Path:
    """Refuse an output path before any work: equal to (or inside, for a folder) one of ``inputs``; a directory
    where a file is wanted (``kind="file"``) or a file where a folder is wanted (``kind="dir"``); a parent
    folder that exists but cannot be written."""
    out = Path(path).expanduser()
    for given in inputs:
        if given is None:
            continue
        src = Path(given).expanduser()
        if _same(out, src) or kind == "dir" and os.path.realpath(src).startswith(os.path.realpath(out) + os.sep):
            raise ValueError(f"{option} {str(out)!r} is the input {str(src)!r}; writing there would destroy it. "
                             "Choose another output path.")
    if kind == "file" and out.is_dir():
        raise IsADirectoryError(f"{option} {str(out)!r} is a directory; give a file name, e.g. "
                                f"{str(out / 'results.json')!r}.")
    if kind == "dir" and out.exists() and not out.is_dir():
        raise FileExistsError(f"{option} {str(out)!r} is an existing file; give a folder (new or existing).")
    parent = out.parent if kind == "file" or not out.exists() else out
    existing = next((p for p in [parent, *parent.parents] if p.exists()), None)
    if existing is not None and (not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK)):
        raise PermissionError(f"{option} {str(out)!r} cannot be written: {str(existing)!r} is "
                              + ("not a folder." if not existing.is_dir() else "not writable."))
    return out
