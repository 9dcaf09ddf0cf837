"""``dialeval hub build``: one ready-to-push folder per Hugging Face Hub repository, written from the
installed package itself.

Layout of ``OUT``::

    spaces/<metric>/        one Space per declared metric (registry order, plugins included): the module
                            script, its card, app.py, requirements.txt and the vendored wheel
    spaces/dialeval-demo/   the demo Space (every metric at once)
    datasets/<name>/        the dataset repos (the ``dialeval datasets export`` layout)
    datasets/dialeval-leaderboard/  with ``leaderboard=``: the leaderboard table, plot and eval_results YAML
    upload.sh               the ``hf upload`` commands (huggingface_hub >= 1),
                            also printed

Each Space's ``requirements.txt`` must resolve with nothing else present (the Space builder mounts only
that file when it runs ``pip install -r``), so it never names a relative path: by default it installs the
wheel vendored into the folder by the absolute URL the Hub serves it at once ``hf upload`` has pushed it
(``https://huggingface.co/spaces/<org>/<name>/resolve/main/<wheel>``); ``wheel_url`` names another URL
(a release asset, a local server in the tests); ``from_index=True`` asks for ``dialeval==<version>`` from
the package index instead (see CHANGELOG.md for the release steps). ``OUT`` is written to a temporary
folder beside it and renamed into place.
"""

from __future__ import annotations

import errno
import json
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dialeval import registry
from dialeval._version import __version__
from dialeval.hub.cards import (
    Install,
    card_datasets,
    card_models,
    client_example,
    metric_card,
    preload,
    python_version,
    sdk_version,
)
from dialeval.io.files import atomic_directory, check_output_path
from dialeval.resources import resource_path, space_template

DEMO_NAME = "dialeval-demo"


@dataclass(frozen=True)
class HubRepo:
    """One folder to publish: ``repo_id`` on the Hub, ``repo_type`` (``space`` or ``dataset``)."""

    repo_id: str
    repo_type: str
    folder: Path

    def upload_command(self) -> str:
        """``hf upload`` (huggingface_hub >= 1) creates the repo when
        missing (a Space with the gradio SDK) and pushes the folder as its root."""
        words = ["hf", "upload", self.repo_id, str(self.folder), ".", "--repo-type", self.repo_type]
        return " ".join(shlex.quote(w) for w in words)


def annotate_imports(script: str, source: str) -> str:
    """The module script with ``# From: <source>`` after each dialeval import: ``evaluate.load`` reads it
    and, where dialeval is missing, says ``pip install <source>`` (not ``pip install dialeval``); ``source`` is
    the quoted requirement with the metric's extras, e.g. ``"dialeval[models] @ URL"``."""
    return re.sub(r"^((?:from|import) dialeval\b[^#\n]*?)[ \t]*$", rf"\1  # From: {source}", script, flags=re.M)


def check_wheel_url(url: str) -> str:
    """``url`` when it is an absolute http(s) URL (a Space builder resolves nothing else); else one line."""
    if not re.match(r"^https?://[^\s/]+(/\S*)?$", url or ""):
        raise ValueError(f"--wheel-url {url!r} is not an absolute http(s) URL; requirements.txt is installed "
                         "with no other file present, so a relative path cannot resolve.")
    return url


def check_wheel(wheel: str | Path) -> Path:
    """``--wheel``: a dialeval wheel (``dialeval-<version>-*.whl``, a zip archive holding the ``dialeval``
    package), the one file a Space vendors and names in requirements.txt; any other file is refused."""
    path = Path(wheel).expanduser()
    name = path.name
    if not path.is_file() or not name.endswith(".whl") or not name.startswith("dialeval-"):
        raise ValueError(f"--wheel {str(wheel)!r} is not a dialeval wheel (a dialeval-<version>-*.whl file); build "
                         "one with `pip wheel --no-deps .`, or leave --wheel out (hub build builds it).")
    try:
        with zipfile.ZipFile(path) as archive:
            ok = any(n.startswith("dialeval/") for n in archive.namelist())
    except (zipfile.BadZipFile, OSError):
        ok = False
    if not ok:
        raise ValueError(f"--wheel {str(wheel)!r} is not a wheel holding the dialeval package; build one with "
                         "`pip wheel --no-deps .`, or leave --wheel out.")
    return path


# -- the wheel --------------------------------------------------------------------------------------
def source_tree() -> Path | None:
    """The source checkout this package runs from (``pyproject.toml`` beside ``src/dialeval``), if any."""
    root = Path(__file__).resolve().parents[3]
    if (root / "pyproject.toml").is_file() and (root / "src" / "dialeval" / "__init__.py").is_file():
        return root
    return None


#: The checkout folders that make up the wheel (``setup.cfg``'s ``package_dir``).
SOURCE_FOLDERS = ("src", "metrics", "spaces", "datasets_scripts")


def build_wheel(dest: str | Path, source: str | Path | None = None) -> Path:
    """Build the dialeval wheel into ``dest`` from ``source`` (default: this checkout), from a copy of the
    tree so that concurrent edits or builds do not mix into it. Returns the wheel's path."""
    root = Path(source) if source else source_tree()
    if root is None:
        raise FileNotFoundError("no dialeval source tree to build a wheel from (an installed wheel is not one): "
                                "pass --wheel PATH or --from-index.")
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="dialeval-wheel-") as tmp:
        copy = Path(tmp) / "src-tree"
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build", "dist")
        copy.mkdir()
        for name in ("pyproject.toml", "setup.cfg", "README.md", "LICENSE"):
            if (root / name).is_file():
                shutil.copy2(root / name, copy / name)
        for folder in SOURCE_FOLDERS:  # setup.cfg maps each into the one dialeval package
            shutil.copytree(root / folder, copy / folder, ignore=ignore)
        proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                               "-w", str(dest), str(copy)], capture_output=True, text=True)
        if proc.returncode != 0:
            if "No space left on device" in proc.stdout + proc.stderr:
                raise OSError(errno.ENOSPC, f"building the wheel failed: no space left on device (under {str(dest)!r} "
                              f"or {tempfile.gettempdir()!r}); free space, or pass --wheel PATH or --from-index")
            raise RuntimeError(f"building the wheel failed:\n{proc.stdout}\n{proc.stderr}")
    wheels = sorted(dest.glob(f"dialeval-{__version__}-*.whl"))
    if not wheels:
        raise RuntimeError(f"pip wheel wrote no dialeval-{__version__} wheel into {dest}.")
    return wheels[-1]


# -- folders ----------------------------------------------------------------------------------------
def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _vendor(folder: Path, install: Install) -> None:
    if install.wheel is not None:
        shutil.copy2(install.wheel, folder / install.wheel.name)


def metric_extras(decl: registry.MetricDeclaration) -> list[str]:
    """The dialeval extras a metric's Space needs: its declared ``extras``, ``models`` for model metrics,
    and ``space`` (the widget) always."""
    extras = set(decl.extras) | ({"models"} if decl.needs_model else set()) | {"space"}
    return sorted(extras)


def write_metric_space(decl: registry.MetricDeclaration, folder: Path, org: str, install: Install,
                       index: int = 0) -> HubRepo:
    """``folder``: the module script, the card, ``app.py``, ``requirements.txt`` (and ``packages.txt`` for declared
    ``system_packages``), the wheel, and the
    metric's declared ``resources`` (the Sem-Ent Space carries its fitted default space, so that it
    scores with nothing pasted)."""
    repo_id = f"{org}/{decl.name}"
    folder.mkdir(parents=True)
    script = decl.script_dir / f"{decl.name}.py"
    extras = metric_extras(decl)
    # evaluate.load's hint for a missing dialeval: the same requirement as the card's install line (extras kept)
    hint = f'"{install.requirement([e for e in extras if e != "space"], repo_id)}"'
    _write(folder / script.name, annotate_imports(script.read_text(encoding="utf-8"), hint))
    _write(folder / "README.md", metric_card(decl, repo_id, install, extras, index))
    app = space_template("metric", "app.py").read_text(encoding="utf-8")
    app = app.replace("__METRIC__", decl.name).replace("__REPO_ID__", repo_id)
    _write(folder / "app.py", app.replace("RESOURCES: dict[str, str] = {}", f"RESOURCES: dict[str, str] = {json.dumps(decl.resources)}"))
    _write(folder / "requirements.txt", install.requirements(extras, repo_id))
    if decl.system_packages:  # Debian packages the Space builder installs (``packages.txt``)
        _write(folder / "packages.txt", "".join(f"{name}\n" for name in decl.system_packages))
    _vendor(folder, install)
    for rel in decl.resources.values():
        shutil.copytree(resource_path(rel), folder / rel, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return HubRepo(repo_id, "space", folder)


def demo_client_arguments() -> dict[str, Any]:
    """The demo card's ``/evaluate`` example: responses and the model-free metrics that read them, ticked
    (every other parameter keeps its default: empty boxes, unticked metrics), so it answers in seconds."""
    readers = [d.name for d in registry.by_input("responses") if not d.needs_model]
    return {"responses": "i like tea .\ni like coffee .\nno thanks", **{f"use_{name}": True for name in readers},
            "draw_plots": False}


#: The demo card's ``suggested_hardware``; a suggestion only: the Space runs on free CPU until hardware is
#: requested (billed), which ``upload.sh`` does when ``$DIALEVAL_SPACE_HARDWARE`` names a flavor.
SUGGESTED_HARDWARE = "t4-small"


def hardware_check(torch: str) -> str:
    """The first ``upload.sh`` line: with ``$DIALEVAL_SPACE_HARDWARE`` set, the flavour is checked (a Space hardware
    name that suits the Spaces' torch build, :func:`dialeval.hub.space_hardware.check_hardware`) before anything is
    uploaded; a mismatch stops the script with one line."""
    return (f'if [ -n "${{DIALEVAL_SPACE_HARDWARE:-}}" ]; then python -m dialeval.hub.space_hardware '
            f'"$DIALEVAL_SPACE_HARDWARE" {shlex.quote(torch)}; fi\n')


def hardware_request(repo_id: str) -> str:
    """The ``upload.sh`` lines that request hardware for the Space ``repo_id`` when ``$DIALEVAL_SPACE_HARDWARE``
    is set (e.g. ``t4-small``; paid hardware is billed to the owner, so nothing is requested by default)."""
    call = ("from huggingface_hub import HfApi; import os; "
            f'HfApi().request_space_hardware({json.dumps(repo_id)}, os.environ["DIALEVAL_SPACE_HARDWARE"])')
    return (f"# {repo_id} runs on free CPU hardware unless you ask for more (billed): "
            f"DIALEVAL_SPACE_HARDWARE={SUGGESTED_HARDWARE} bash upload.sh\n"
            f'if [ -n "${{DIALEVAL_SPACE_HARDWARE:-}}" ]; then python -c {shlex.quote(call)}; fi\n')


def write_demo_space(folder: Path, org: str, install: Install) -> HubRepo:
    """The demo Space: every metric at once (``dialeval.demo.build_demo``)."""
    repo_id = f"{org}/{DEMO_NAME}"
    folder.mkdir(parents=True)
    links = "\n".join(f"- [{d.title}](https://huggingface.co/spaces/{org}/{d.name}) (`{d.name}`): {d.summary}"
                      for d in registry.declarations().values())
    card = space_template("demo", "README.md").read_text(encoding="utf-8")
    decls = list(registry.declarations().values())
    models = "".join(f"\n  - {repo}" for repo in preload(decls))
    linked = {"__MODELS__": "".join(f"\n  - {repo}" for repo in card_models(decls)),
              "__DATASETS__": "".join(f"\n  - {repo}" for repo in card_datasets(decls, org))}
    client = "\n".join(client_example(repo_id, "/evaluate", demo_client_arguments(),
                                      "status, table, *plots, download"))
    for key, value in {"__SDK_VERSION__": sdk_version(), "__PYTHON_VERSION__": python_version(),
                       "__PRELOAD__": models, "__CLIENT_EXAMPLE__": client,
                       "__INSTALL__": install.command(repo_id, ["models", "space"]), "__METRIC_LINKS__": links,
                       **linked}.items():
        card = card.replace(key, value)
    _write(folder / "README.md", card)
    shutil.copy2(space_template("demo", "app.py"), folder / "app.py")
    _write(folder / "requirements.txt",
           "# gradio comes with the Space's base image (sdk_version in README.md); `spaces` and `mcp` with the space extra.\n"
           + install.requirements(["models", "space"], repo_id))
    _vendor(folder, install)
    return HubRepo(repo_id, "space", folder)


def only_known_repeats(name: str, data_dir: Path, cache_dir: str | Path | None = None) -> bool:
    """Whether every repeated record of dataset ``name`` is one its builder documents (``KNOWN_REPEATS``, e.g.
    DailyDialog's three repeated dialogues; ``"exact"`` for a split: every exact repeat there, as DailyDialog's training
    split has 569), so that it is published as released; ``False`` without any."""
    import importlib

    from dialeval.datasets import BUILDERS, FILE_BUILDERS, config_names, duplicated_rows, load

    builder = {**BUILDERS, **FILE_BUILDERS}[name]  # a module may hold several builders (usr.py: two datasets)
    known = getattr(importlib.import_module(builder.__module__), "KNOWN_REPEATS", None)
    if not known:
        return False
    for cfg in config_names(name):
        found = duplicated_rows(name, load(name, cfg, data_dir=data_dir, cache_dir=cache_dir, allow_duplicates=True))
        if any(known.get(split) != "exact" and (known.get(split) or {}).get(rid) != first
               for split, pairs in found.items() for rid, first in pairs):
            return False
    return True


def write_dataset_repo(name: str, folder: Path, org: str, data_root: Path,
                       cache_dir: str | Path | None = None, allow_duplicates: bool = False) -> HubRepo:
    """Export dataset ``name`` (``dialeval datasets export``) from its original files under ``data_root``
    into ``folder``, with ``<org>`` filled in its card; the repeats its builder documents (DailyDialog's) are
    published as released, with one line saying so."""
    from dialeval.datasets import DATA_FOLDERS, export

    data_dir = data_root / DATA_FOLDERS[name]
    if not allow_duplicates and only_known_repeats(name, data_dir, cache_dir):
        print(f"dialeval hub build: {name}: keeping the repeated records its builder documents (KNOWN_REPEATS) as "
              "released", file=sys.stderr)
        allow_duplicates = True
    export(name, folder, data_dir=data_dir, cache_dir=cache_dir, allow_duplicates=allow_duplicates)
    card = folder / "README.md"
    text = card.read_text(encoding="utf-8").replace("<org>/", f"{org}/")
    if "<org>" in text:
        raise ValueError(f"{card}: a `<org>` placeholder is left after filling {org!r}; fix the card template.")
    card.write_text(text, encoding="utf-8")
    return HubRepo(f"{org}/{name}", "dataset", folder)


def dataset_sources(names: Iterable[str], data_root: Path | None, required: Iterable[str] = ()) -> dict[str, Path]:
    """The original-files folder of each dataset in ``names`` that has one under ``data_root``; a dataset
    whose folder is absent is skipped with one line on stderr, unless it is ``required`` (named by ``--only``),
    which is one error naming the fix (``hub build`` never skips a dataset silently)."""
    from dialeval.datasets import DATA_FOLDERS

    names, required = list(names), set(required)
    if names and data_root is None:
        raise ValueError(f"the dataset repos ({', '.join(names)}) are written from their original files: pass "
                         "--data-dir DIR (or set $DIALEVAL_DATA_DIR), or --no-datasets to write the Spaces only.")
    absent = [name for name in names if not (data_root / DATA_FOLDERS[name]).is_dir()]
    for name in (n for n in absent if n not in required):
        print(f"dialeval hub build: skipped dataset {name}: no original files at {data_root / DATA_FOLDERS[name]} "
              f"(see its card for where to get them, then rerun, or --only {name} to require it)", file=sys.stderr)
    missing = [f"{name} ({data_root / DATA_FOLDERS[name]})" for name in absent if name in required]
    if missing:
        raise ValueError(f"--data-dir {data_root}: missing original files for {', '.join(missing)}; point "
                         "--data-dir at the folder holding them, or leave those datasets out (--only / --no-datasets).")
    return {name: data_root / DATA_FOLDERS[name] for name in names if name not in absent}


def write_leaderboard_repo(source: str | Path, folder: Path, org: str) -> HubRepo:
    """The leaderboard dataset (``dialeval leaderboard --out SOURCE``): rows, pairs, plot, card and each
    metric's model-index ``eval_results`` YAML (:func:`dialeval.meta.publish.write_hub_dataset`)."""
    from dialeval.meta.publish import write_hub_dataset

    return HubRepo(write_hub_dataset(source, folder, org), "dataset", folder)


# -- everything -------------------------------------------------------------------------------------
def repo_names() -> list[str]:
    """Every repo ``build`` can write: the declared metrics, the demo, then the datasets."""
    from dialeval.datasets import BUILDERS

    return [*registry.declarations(), DEMO_NAME, *BUILDERS]


def _check_org(org: str) -> None:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}", org or ""):
        raise ValueError(f"--org {org!r} is not a Hub user or organisation name.")


def _write_all(tmp: Path, org: str, install: Install, names: set[str], data_root: Path | None,
               cache_dir: str | Path | None, allow_duplicates: bool = False) -> list[HubRepo]:
    from dialeval.datasets import BUILDERS

    datasets = [name for name in BUILDERS if name in names]  # their originals were checked by build()
    repos: list[HubRepo] = []
    for index, decl in enumerate(registry.declarations().values()):
        if decl.name in names:
            repos.append(write_metric_space(decl, tmp / "spaces" / decl.name, org, install, index))
    if DEMO_NAME in names:
        repos.append(write_demo_space(tmp / "spaces" / DEMO_NAME, org, install))
    for name in datasets:
        assert data_root is not None
        repos.append(write_dataset_repo(name, tmp / "datasets" / name, org, data_root, cache_dir,
                                        allow_duplicates))
    return repos


#: What ``build`` writes at the top of ``OUT``: a folder holding only these is an earlier build (replaceable).
BUILD_ENTRIES = frozenset({"spaces", "datasets", "upload.sh"})


def is_build_folder(folder: Path) -> bool:
    """True when ``folder`` looks like an earlier ``hub build`` output (``upload.sh`` and nothing foreign)."""
    names = {p.name for p in folder.iterdir()}
    return "upload.sh" in names and names <= BUILD_ENTRIES


def build(org: str, out: str | Path, *, from_index: bool = False, wheel: str | Path | None = None,
          wheel_url: str = "", data_dir: str | Path | None = None, only: Iterable[str] | None = None,
          datasets: bool = True, cache_dir: str | Path | None = None, overwrite: bool = False,
          allow_duplicates: bool = False, leaderboard: str | Path | None = None, torch: str = "cpu") -> list[HubRepo]:
    """Write the Hub folders under ``out`` (see the module docstring) and return the repos written.
    ``only`` restricts to some of :func:`repo_names`; ``datasets=False`` leaves the dataset repos out
    (otherwise they need ``data_dir`` or ``$DIALEVAL_DATA_DIR``). ``out`` follows :func:`dialeval.io.files.check_output_path`:
    a non-empty folder that is not an earlier build is replaced only with ``overwrite``. ``leaderboard`` (a
    ``dialeval leaderboard`` output folder) adds the ``datasets/dialeval-leaderboard`` folder. ``torch`` is the torch
    build the model Spaces pin (:mod:`dialeval.hub.space_hardware`: ``cpu``, ``cu126`` or the ``image``'s)."""
    import os

    from dialeval.datasets import BUILDERS
    from dialeval.hub.space_hardware import check_build

    _check_org(org)
    check_build(torch)
    known = repo_names()
    names = set(known if only is None else only)
    unknown = sorted(names - set(known))
    if unknown:
        raise ValueError(f"unknown repo(s) {unknown}; choose among {known}.")
    if not datasets:
        if only is not None and names & set(BUILDERS):
            raise ValueError(f"--no-datasets contradicts --only {sorted(names & set(BUILDERS))}; drop one of them.")
        names -= set(BUILDERS)
    if wheel is not None:
        check_wheel(wheel)
    if wheel_url:
        check_wheel_url(wheel_url)
        if from_index:
            raise ValueError("--wheel-url names a vendored wheel, --from-index the index release; choose one.")
    data_root = Path(data_dir) if data_dir else (Path(os.environ["DIALEVAL_DATA_DIR"])
                                                 if os.environ.get("DIALEVAL_DATA_DIR") else None)
    if leaderboard is not None and Path(out).expanduser().resolve() in (lb := Path(leaderboard).expanduser().resolve(),
                                                                         *lb.parents):
        raise ValueError(f"--leaderboard {str(leaderboard)!r} is inside --out {str(out)!r}, which is replaced; move one.")
    out = check_output_path(out, inputs=[data_root, wheel, cache_dir], kind="dir", option="--out",
                            overwrite=overwrite, owned=is_build_folder).resolve()
    required = set(only or ()) & set(BUILDERS)  # named by --only: its originals must be there
    sources = dataset_sources([n for n in BUILDERS if n in names], data_root, required)  # before any work
    names = (names - set(BUILDERS)) | set(sources)  # a dataset without originals is skipped (one line)
    with atomic_directory(out, overwrite=overwrite, owned=is_build_folder) as tmp:
        install = Install(None, torch=torch)
        if not from_index:
            wheel_path = Path(wheel) if wheel else build_wheel(tmp / ".wheel")
            install = Install(wheel_path, wheel_url=wheel_url, torch=torch)
        repos = _write_all(tmp, org, install, names, data_root, cache_dir, allow_duplicates)
        if leaderboard is not None:
            repos.append(write_leaderboard_repo(leaderboard, tmp / "datasets" / "dialeval-leaderboard", org))
        shutil.rmtree(tmp / ".wheel", ignore_errors=True)
        repos = [HubRepo(r.repo_id, r.repo_type, out / r.folder.relative_to(tmp)) for r in repos]
        _write(tmp / "upload.sh", "#!/usr/bin/env bash\nset -euo pipefail\n"
               + (hardware_check(torch) if DEMO_NAME in names else "")
               + "".join(r.upload_command() + "\n" for r in repos)
               + (hardware_request(f"{org}/{DEMO_NAME}") if DEMO_NAME in names else ""))
    return repos
