"""One way to write files: every output goes to a temporary sibling and is renamed into place, so a crash,
a kill or a full disk never leaves half a file (or half a folder) where a reader would take it for whole.

- :func:`atomic_write_bytes` / :func:`atomic_write_text` / :func:`atomic_write_json` / :func:`atomic_write_lines`
  for single files;
- :func:`atomic_directory` for a folder (a dataset export, a semantic space): the caller writes into a
  temporary sibling, its card/metadata last, and the folder is renamed into place only when the block ends
  without an error;
- :func:`check_output_path` is the one output policy, applied before any work is done: it refuses an output
  that equals, contains or lies inside an input or data folder, an existing non-regular file (a device, a
  FIFO), a directory where a file is expected, a file where a folder is expected, a non-empty folder the
  command did not create (unless ``overwrite``) and a folder that cannot be written. ``-`` is stdout and
  ``~`` expands, in every writer.
- :func:`remove_temporaries_on_sigterm` turns SIGTERM into ``SystemExit`` so that the temporary files and
  folders of an interrupted write are removed as they are on an error.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import shutil
import signal
import stat
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def resolve_output(path: str | os.PathLike) -> Path:
    """The one entry an output path names, fixed before any check or write: ``~`` expanded and every folder
    before the last part resolved (``..``, ``.``, symlinks), so ``missing/../keep`` is ``keep`` and no ``missing``
    folder is created on the way; the last part is kept as given (a symlink there stays a symlink)."""
    out = Path(os.path.expanduser(os.fspath(path)))
    if out.name in ("", ".", ".."):
        return Path(os.path.realpath(out))
    return Path(os.path.realpath(out.parent)) / out.name


def first_missing(path: Path) -> Path | None:
    """The outermost folder that creating ``path`` (a resolved output, see :func:`resolve_output`) would create,
    or ``None`` when ``path`` exists: what a command may remove after an error, since it made it."""
    missing = None
    for p in [path, *path.parents]:
        if os.path.lexists(p):
            break
        missing = p
    return missing


def remove_created(path: Path | None) -> None:
    """Remove ``path`` (from :func:`first_missing`, taken before the run) when it is now a real folder: the run
    created it. A path that is missing, a file or a symlink is left alone."""
    if path is not None and path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)


def _parent(path: Path) -> Path:
    parent = path.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OSError(f"cannot create the folder {str(parent)!r} for {str(path)!r}: {exc.strerror or exc}.") from None
    return parent


#: The environment variable naming the folder of the datasets' original files (never written into).
DATA_ENV = "DIALEVAL_DATA_DIR"
#: The output path that means standard output.
STDOUT = "-"


def is_stdout(path: str | os.PathLike | None) -> bool:
    """True for ``-`` (write to standard output instead of a file)."""
    return path is not None and str(path) == STDOUT


def _write_via_temp(path: str | os.PathLike, write: Any, *, binary: bool) -> Path:
    if is_stdout(path):
        stream = sys.stdout.buffer if binary else sys.stdout
        write(stream)
        stream.flush()
        return Path(STDOUT)
    out = resolve_output(path)
    _refuse_special(out, "output")
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


def json_safe(value: Any) -> Any:
    """``value`` as strict JSON data: NaN and infinities as ``null``, numpy numbers as Python numbers, tuples
    as lists (the one converter behind every JSON dialeval writes or prints)."""
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if hasattr(value, "item") and callable(value.item) and getattr(value, "shape", None) == ():
        value = value.item()  # a numpy scalar
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def json_text(obj: Any, *, indent: int | None = 2) -> str:
    """Strict JSON (:func:`json_safe`: never a bare NaN) with non-ASCII kept readable; a lone surrogate (not
    encodable as UTF-8) is written escaped."""
    obj = json_safe(obj)
    text = json.dumps(obj, indent=indent, ensure_ascii=False, allow_nan=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(obj, indent=indent, ensure_ascii=True, allow_nan=False)
    return text


def file_sha256(path: str | os.PathLike) -> str:
    """The SHA-256 (hex) of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


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
def atomic_directory(target: str | os.PathLike, *, overwrite: bool = False,
                     owned: Callable[[Path], bool] | None = None) -> Iterator[Path]:
    """Yield a temporary sibling folder of ``target``; when the block succeeds it replaces ``target``.

    Write the folder's card or metadata last: a folder left behind by a kill is a hidden ``.NAME.tmp-*``
    sibling without one, never ``target``. An existing non-empty ``target`` is replaced only when ``owned``
    says it is an earlier output of the same command (or with ``overwrite``), and only after the new one is
    complete; an existing file at ``target`` is refused. The temporary folder is removed on any error, on
    Ctrl-C and (see :func:`remove_temporaries_on_sigterm`) on SIGTERM.
    """
    out = resolve_output(target)
    _refuse_special(out, "output")
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"{str(out)!r} is a file; the output must be a folder (a new or existing directory).")
    _refuse_foreign_folder(out, "output", overwrite, owned)
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


def _sigterm(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


def remove_temporaries_on_sigterm() -> None:
    """Make SIGTERM raise ``SystemExit(143)`` in the main thread, so that ``finally`` blocks (temporary files
    and folders of :func:`atomic_directory` and the atomic writers, the demo's results folder) run as they do
    on Ctrl-C. A handler someone else installed is kept."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, _sigterm)


def _same(a: Path, b: Path) -> bool:
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def _refuse_special(out: Path, option: str) -> None:
    """An existing device, FIFO or socket is never replaced by a regular file (``/dev/null`` as root)."""
    try:
        mode = os.stat(out).st_mode
    except OSError:
        return
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise ValueError(f"{option} {str(out)!r} exists and is not a regular file (a device, FIFO or socket); "
                         "dialeval writes regular files only: give a file path (or - for stdout).")


def _refuse_foreign_folder(out: Path, option: str, overwrite: bool, owned: Callable[[Path], bool] | None) -> None:
    if overwrite or not out.is_dir():
        return
    try:
        entries = next(os.scandir(out), None)
    except OSError:
        return
    if entries is not None and not (owned is not None and owned(out)):
        raise FileExistsError(f"{option} {str(out)!r} is a non-empty folder this command did not create; it would "
                              "be replaced as a whole. Give a new or empty folder, or pass --overwrite.")


def _inside(child: str, parent: str) -> bool:
    return child == parent or child.startswith(parent.rstrip(os.sep) + os.sep)


def check_output_path(path: str | os.PathLike, *, inputs: Sequence[str | os.PathLike | None] = (),
                      kind: str = "file", option: str = "--output", overwrite: bool = False,
                      owned: Callable[[Path], bool] | None = None) -> Path:
    """The output policy, before any work. Refuse an output that equals, contains or lies inside one of
    ``inputs`` (input files and data folders) or ``$DIALEVAL_DATA_DIR``; an existing device/FIFO/socket; a directory where a file is
    wanted (``kind="file"``) or a file where a folder is wanted (``kind="dir"``); for a folder the command
    replaces as a whole (``owned`` given: recognises the command's own earlier output), a non-empty folder it
    did not create unless ``overwrite``; a parent folder that cannot be written. ``-`` (stdout, files only)
    is returned as is; every other path is checked and returned resolved (:func:`resolve_output`)."""
    if is_stdout(path):
        if kind == "file":
            return Path(STDOUT)
        raise ValueError(f"{option} -: this output is a folder, which cannot go to stdout; give a folder path.")
    out = resolve_output(path)
    real_out = os.path.realpath(out)
    sources = [Path(g).expanduser() for g in [*inputs, os.environ.get(DATA_ENV) or None]
               if g is not None and not is_stdout(g) and "://" not in str(g)]
    for src in sources:
        if _same(out, src):
            raise ValueError(f"{option} {str(out)!r} is the input {str(src)!r}; writing there would destroy it. "
                             "Choose another output path.")
    if kind == "file" and out.is_dir():  # kind="any": either (the command checks which it wants)
        raise IsADirectoryError(f"{option} {str(out)!r} is a directory; give a file name, e.g. "
                                f"{str(out / 'results.json')!r}.")
    for src in sources:
        real_src = os.path.realpath(src)
        if _inside(real_out, real_src) or _inside(real_src, real_out):
            how = "lies inside" if _inside(real_out, real_src) else \
                "is a directory that contains" if out.is_dir() else "contains"
            raise ValueError(f"{option} {str(out)!r} {how} the input {str(src)!r}; writing there could destroy "
                             "it. Choose an output outside every input and data folder.")
    _refuse_special(out, option)
    if kind == "dir" and out.exists() and not out.is_dir():
        raise FileExistsError(f"{option} {str(out)!r} is an existing file; give a folder (new or existing).")
    if kind == "dir" and owned is not None:
        _refuse_foreign_folder(out, option, overwrite, owned)
    parent = out if kind != "file" and out.is_dir() else out.parent
    existing = next((p for p in [parent, *parent.parents] if p.exists()), None)
    if existing is not None and (not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK)):
        raise PermissionError(f"{option} {str(out)!r} cannot be written: {str(existing)!r} is "
                              + ("not a folder." if not existing.is_dir() else "not writable."))
    return out


#: The argparse destinations that name an output of a ``dialeval`` command, besides every ``*_out`` one
#: (:func:`is_output_option`); every other string option is an input.
OUTPUT_OPTIONS = ("output", "out", "plot")


def is_output_option(dest: str) -> bool:
    """Whether the argparse destination ``dest`` names an output (``--out``, ``--plot``, ``--<what>-out``)."""
    return dest in OUTPUT_OPTIONS or dest.endswith("_out")


def _option_name(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def _path_strings(dest: str, value: Any) -> list[str]:
    """The strings of one parsed option that may name a path: the value, list items, VALUE of KEY=VALUE
    (``--metric-arg space=DIR``: a saved space, a model folder, a classifier) and PATH of KIND:PATH
    (``--encoder hf-last-token:DIR``)."""
    items = value if isinstance(value, (list, tuple)) else [value]
    out = []
    for item in items:
        if isinstance(item, os.PathLike):
            item = os.fspath(item)
        if not isinstance(item, str) or not item or is_stdout(item) or "://" in item or "\0" in item:
            continue
        out.append(item)
        for sep in ("=", ":"):
            rest = item.partition(sep)[2]
            if rest and not is_stdout(rest):
                out.append(rest)
    return out


def _names_an_input(text: str, dest: str) -> bool:
    """A string that exists on disk, or the value of a folder option (``--cache-dir``, ``--data-dir``) that a
    command may create."""
    try:
        return os.path.lexists(os.path.expanduser(text)) or dest.endswith("dir")
    except (OSError, ValueError):
        return False


#: Kernel pseudo-filesystems: a cache or output there is never a real folder (``/proc/self`` hung an export).
PSEUDO_FILESYSTEMS = ("/proc", "/sys", "/dev")


def check_cache_dir(path: str | os.PathLike, option: str = "--cache-dir") -> Path:
    """A cache folder (written and read back by a command): not inside a kernel pseudo-filesystem, not a file,
    writable where it exists (else its nearest existing parent must be)."""
    out = Path(path).expanduser()
    real = os.path.realpath(out)
    pseudo = next((root for root in PSEUDO_FILESYSTEMS if _inside(real, root)), None)
    if pseudo is not None:
        raise ValueError(f"{option} {str(out)!r} is inside {pseudo}, a kernel pseudo-filesystem, not a folder for "
                         "files; give a cache folder on disk.")
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"{option} {str(out)!r} is a file; give a folder (new or existing).")
    existing = next((p for p in [out, *out.parents] if p.exists()), None)
    if existing is not None and (not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK)):
        raise PermissionError(f"{option} {str(out)!r} cannot be written ({str(existing)!r} is "
                              + ("not a folder)." if not existing.is_dir() else "not writable)."))
    return out


def check_command_paths(options: dict[str, Any], *, overwrite: bool = False) -> None:
    """The output policy across one command's options (``vars(args)``), before any work: every string option
    that names a path (an existing file or folder, a ``*-dir`` option, a ``KEY=PATH`` metric argument) is an
    input; an output (:func:`is_output_option`) may not equal, contain or lie inside one, even through a symlink;
    two outputs may not be one path, one inside the other, or both stdout; and an existing output file (or a
    symlink to one) is refused unless ``overwrite``. Folder outputs keep their own rule in the command (an
    earlier output of the same command is replaced; see :func:`check_output_path`)."""
    if isinstance(cache := options.get("cache_dir"), (str, os.PathLike)):
        check_cache_dir(cache)
    outputs = [(_option_name(d), v) for d, v in options.items() if is_output_option(d) and isinstance(v, (str, os.PathLike))]
    inputs = [text for dest, value in options.items() if not is_output_option(dest) and not dest.startswith("_")
              for text in _path_strings(dest, value) if _names_an_input(text, dest)]
    stdout = [name for name, value in outputs if is_stdout(value)]
    if len(stdout) > 1:
        raise ValueError(f"{' and '.join(stdout)} both write to stdout (-); give at most one of them as -.")
    files = [(name, resolve_output(value)) for name, value in outputs if not is_stdout(value)]
    for i, (name, path) in enumerate(files):
        for other_name, other in files[i + 1:]:
            a, b = os.path.realpath(path), os.path.realpath(other)
            if _inside(a, b) or _inside(b, a):
                how = "is" if a == b else "lies inside" if _inside(a, b) else "contains"
                raise ValueError(f"{name} {str(path)!r} {how} {other_name} {str(other)!r}; one output would replace "
                                 "the other. Give each output its own path.")
        check_output_path(path, inputs=inputs, kind="any", option=name)
        if not overwrite and os.path.lexists(path) and not os.path.isdir(path):
            raise FileExistsError(f"{name} {str(path)!r} is an existing file" + (" (through a symlink)" if
                                  os.path.islink(path) else "") + "; dialeval does not replace a file it did not "
                                  "create. Choose a new path, or pass --overwrite (a file output is then replaced).")
