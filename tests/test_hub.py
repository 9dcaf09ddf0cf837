"""``dialeval hub build``: the folders it writes, and a deploy rehearsal of three of them.

The rehearsal does what a Space does, for real: a fresh venv (the system site-packages stand in for the
Space's base image with torch and gradio), ``pip install -r requirements.txt`` from an empty folder holding
only that file (as the Space builder mounts it), the wheel fetched by its absolute URL from a local HTTP
server on 127.0.0.1 that stands in for the Hub, ``python app.py`` on 127.0.0.1, a ``gradio_client`` call checked
against direct ``compute`` and hand-computed values, and ``evaluate.load(<folder>)`` inside that venv.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from evaluate.loading import get_imports
from huggingface_hub import SpaceCard

import dialeval
from dialeval import registry
from dialeval.cli import main
from dialeval.hub import repos as hub
from dialeval.models.runtime import hub_id
from dialeval.resources import resource_path

ORG = "acme"
CPU_TORCH = ["--extra-index-url https://download.pytorch.org/whl/cpu", "torch==2.13.0+cpu"]
WHEEL = f"dialeval-{dialeval.__version__}-py3-none-any.whl"
RESPONSES = ["i like tea .", "i like coffee .", "no thanks"]
CARD_FIELDS = {"title", "emoji", "colorFrom", "colorTo", "sdk", "sdk_version", "python_version", "app_file", "pinned",
               "license", "tags", "short_description"}


class FileServer:
    """``python -m http.server`` on 127.0.0.1 serving ``folder`` (started here, stopped by its pid)."""

    def __init__(self, folder: Path) -> None:
        self.port = free_port()
        self.proc = subprocess.Popen([sys.executable, "-m", "http.server", str(self.port), "--bind", "127.0.0.1",
                                      "--directory", str(folder)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.1)
        self.stop()
        raise AssertionError("the local HTTP server did not start")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


@pytest.fixture(scope="module")
def wheel_server(tmp_path_factory):
    """The built wheel, served over HTTP as the Hub serves a pushed Space's files."""
    folder = tmp_path_factory.mktemp("wheel")
    wheel = hub.build_wheel(folder)
    server = FileServer(folder)
    yield wheel, server.url
    server.stop()


@pytest.fixture(scope="module")
def built(tmp_path_factory, shared_data, wheel_server) -> Path:
    wheel, url = wheel_server
    out = tmp_path_factory.mktemp("hub") / "out"
    names = [*registry.metric_names(), hub.DEMO_NAME, "fed"]
    assert main(["hub", "build", "--org", ORG, "--out", str(out), "--data-dir", str(shared_data), "--only", *names,
                 "--wheel", str(wheel), "--wheel-url", url,
                 "--cache-dir", str(tmp_path_factory.mktemp("hf_cache"))]) == 0
    return out


def test_every_declared_metric_gets_a_complete_space(built, wheel_server):
    import gradio

    url = wheel_server[1] + WHEEL

    for name, decl in registry.declarations().items():
        folder = built / "spaces" / name
        # the module script, its dialeval imports marked with where evaluate.load should say to install it from
        script = (folder / f"{name}.py").read_text(encoding="utf-8")
        # the hint keeps the extras evaluate.load needs (issue 34.7: it said the bare wheel URL)
        needed = sorted(set(decl.extras) | ({"models"} if decl.needs_model else set()))
        requirement = f"dialeval[{','.join(needed)}]" if needed else "dialeval"
        hint = f'"{requirement} @ {url}"'
        assert script.replace(f"  # From: {hint}", "") == (decl.script_dir / f"{name}.py").read_text(encoding="utf-8")
        assert f"from dialeval import evaluate_module  # From: {hint}" in script
        # what evaluate.load reads: where dialeval is missing it says `pip install "<requirement>"`
        assert {i for i in get_imports(str(folder / f"{name}.py")) if i[1] == "dialeval"} == {
            ("library", "dialeval", hint, None)}
        assert (folder / WHEEL).is_file()
        extras = f"[{','.join(sorted([*needed, 'space']))}]"
        torch = CPU_TORCH if "models" in needed else []  # hub build --torch cpu (the default, issue 34.4)
        assert [line for line in (folder / "requirements.txt").read_text().splitlines() if not line.startswith("#")] \
            == [*torch, f"dialeval{extras} @ {url}"]
        assert f'metric_widget("{name}",' in (folder / "app.py").read_text()
        card = SpaceCard.load(folder / "README.md")
        meta = card.data.to_dict()
        assert CARD_FIELDS <= set(meta), CARD_FIELDS - set(meta)
        assert (meta["sdk"], meta["app_file"], meta["license"], meta["pinned"]) == ("gradio", "app.py", "mit", False)
        assert meta["sdk_version"] == gradio.__version__ and meta["title"] == decl.title
        assert {"evaluate", "metric"} <= set(meta["tags"]) and len(meta["short_description"]) <= 60
        assert f'evaluate.load("{ORG}/{name}"' in card.text
        # the Space fetches its default model from the Hub when it is built
        assert meta.get("preload_from_hub") == ([hub_id(decl.models[0])] if decl.needs_model else None)
        assert f'pip install "{requirement} @ {url}"' in card.text
        packages = folder / "packages.txt"  # Debian packages the Space builder installs
        assert (packages.read_text() if packages.exists() else None) == ("wordnet-base\n" if name == "meteor" else None)
    space = built / "spaces" / "sem_ent" / "semantic_space"
    assert (space / "space.safetensors").read_bytes() == resource_path("semantic_space", "space.safetensors").read_bytes()


def test_demo_dataset_folders_and_upload_commands(built, wheel_server):
    demo = built / "spaces" / hub.DEMO_NAME
    assert [line for line in (demo / "requirements.txt").read_text().splitlines() if not line.startswith("#")] == \
        [*CPU_TORCH, f"dialeval[models,space] @ {wheel_server[1]}{WHEEL}"]
    meta = SpaceCard.load(demo / "README.md").data.to_dict()
    assert CARD_FIELDS <= set(meta) and meta["suggested_hardware"] == "t4-small"
    assert sorted(meta["preload_from_hub"]) == ["HuggingFaceTB/SmolLM2-135M-Instruct", "roberta-large-mnli",
                                                "sentence-transformers/all-MiniLM-L6-v2"]
    assert meta["sdk"] == "gradio" and len(meta["short_description"]) <= 60
    assert "__" not in (demo / "README.md").read_text()  # every placeholder filled
    fed = built / "datasets" / "fed"
    assert f'load_dataset("{ORG}/fed", "turn"' in (fed / "README.md").read_text(encoding="utf-8")
    assert "<org>" not in (fed / "README.md").read_text(encoding="utf-8")  # every placeholder filled
    assert sorted(p.relative_to(fed).as_posix() for p in fed.rglob("*.parquet")) == ["dialog/test.parquet",
                                                                                    "turn/test.parquet"]
    upload = (built / "upload.sh").read_text().splitlines()
    assert f"hf upload {ORG}/fed {fed} . --repo-type dataset" in upload
    assert f"hf upload {ORG}/{hub.DEMO_NAME} {demo} . --repo-type space" in upload
    assert not list(built.parent.glob(".out.*"))  # the temporary folder was renamed into place


def test_a_card_placeholder_left_unfilled_is_refused(tmp_path, monkeypatch):
    import dialeval.datasets

    def fake_export(name, folder, **kwargs):
        folder.mkdir(parents=True)
        (folder / "README.md").write_text('load_dataset("<org>/fed")\nAsk <org> for access.\n', encoding="utf-8")

    monkeypatch.setattr(dialeval.datasets, "export", fake_export)
    with pytest.raises(ValueError, match="placeholder is left"):
        hub.write_dataset_repo("fed", tmp_path / "fed", ORG, tmp_path)


def test_from_index_and_atomic_replacement(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "stale.txt").write_text("old build")
    # a folder holding files no build wrote is refused (issue 21), kept byte for byte, replaced with --overwrite
    assert main(["hub", "build", "--org", ORG, "--out", str(out), "--from-index", "--only", "distinct_n"]) == 2
    assert "did not create" in capsys.readouterr().err and (out / "stale.txt").read_text() == "old build"
    assert main(["hub", "build", "--org", ORG, "--out", str(out), "--from-index", "--only", "distinct_n",
                 "--overwrite"]) == 0
    printed = capsys.readouterr().out
    assert f"hf upload {ORG}/distinct_n {out / 'spaces' / 'distinct_n'} . --repo-type space" in printed
    folder = out / "spaces" / "distinct_n"
    assert (folder / "requirements.txt").read_text() == f"dialeval[space]=={dialeval.__version__}\n"
    assert not list(folder.glob("*.whl")) and not (out / "stale.txt").exists()
    assert f'pip install "dialeval=={dialeval.__version__}"' in (folder / "README.md").read_text()
    # default: the vendored wheel named by the Space repo's own file URL (where `hf upload` puts it)
    wheel = hub.build_wheel(tmp_path / "wheel")
    assert main(["hub", "build", "--org", ORG, "--out", str(tmp_path / "by_url"), "--wheel", str(wheel),
                 "--no-datasets"]) == 0
    for folder_ in (tmp_path / "by_url" / "spaces").iterdir():
        line = (folder_ / "requirements.txt").read_text().splitlines()[-1]
        assert line.endswith(f" @ https://huggingface.co/spaces/{ORG}/{folder_.name}/resolve/main/{WHEEL}"), line
        assert (folder_ / WHEEL).read_bytes() == wheel.read_bytes()
    assert not (tmp_path / "by_url" / "datasets").exists()
    shutil.rmtree(tmp_path / "wheel")
    capsys.readouterr()
    # never a relative path, never a silent skip of the datasets
    assert main(["hub", "build", "--org", ORG, "--out", str(tmp_path / "rel"), "--wheel-url", "./x.whl"]) == 2
    assert "not an absolute http(s) URL" in capsys.readouterr().err
    assert main(["hub", "build", "--org", ORG, "--out", str(tmp_path / "nodata"), "--from-index"]) == 2
    err = capsys.readouterr().err
    assert "--data-dir" in err and "--no-datasets" in err and "Traceback" not in err
    assert main(["hub", "build", "--org", ORG, "--out", str(tmp_path / "nodata"), "--from-index",
                 "--data-dir", str(tmp_path / "none"), "--only", "fed"]) == 2
    assert "missing original files for fed" in capsys.readouterr().err
    # a failing build leaves the previous output untouched and no temporary folder behind
    assert main(["hub", "build", "--org", ORG, "--out", str(out), "--from-index", "--only", "not_a_repo"]) == 2
    assert "unknown repo" in capsys.readouterr().err
    assert main(["hub", "build", "--org", "bad org!", "--out", str(out), "--from-index"]) == 2
    assert (folder / "requirements.txt").is_file() and sorted(p.name for p in tmp_path.iterdir()) == ["by_url", "out"]


# ---------------------------------------------------------------------------------------------------
# Deploy rehearsal


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: Space venvs already made in this test session, by their requirements.txt (one rehearsal install per set).
_SPACE_VENVS: dict[str, Path] = {}


def offline_requirements(text: str) -> str:
    """The Space's requirements.txt as the rehearsal installs it: the same requirements without the index lines
    (PyTorch's wheel index is not reachable offline; pip then retried every package against it for minutes). The
    rehearsal installs with ``--no-index``: from what is installed (the system site-packages stand in for the
    Space image) and pip's local wheel folder (``--find-links``), never from a network index."""
    index = ("--extra-index-url", "--index-url", "-i ", "--find-links", "-f ")
    return "".join(line for line in text.splitlines(keepends=True) if not line.strip().startswith(index))


def test_the_rehearsal_installs_offline_what_the_space_installs_online():
    from dialeval.hub.space_hardware import torch_lines

    published = torch_lines("cpu") + "dialeval[models] @ http://127.0.0.1:1/dialeval.whl\n"
    assert CPU_TORCH[0] in published.splitlines()  # what the Hub installs keeps PyTorch's CPU index
    rehearsed = offline_requirements(published).splitlines()
    assert "download.pytorch.org" not in "".join(rehearsed)
    assert [line for line in rehearsed if not line.startswith("#")] == [
        CPU_TORCH[1], "dialeval[models] @ http://127.0.0.1:1/dialeval.whl"]  # the same pins and the same wheel


def space_python(folder: Path, venv: Path) -> Path:
    """A fresh venv with the folder's requirements installed as a Space installs them: from an empty folder
    holding only that file (the wheel comes by its absolute URL), offline (:func:`offline_requirements`). A
    requirements set already installed in this run is reused."""
    requirements = (folder / "requirements.txt").read_text(encoding="utf-8")
    if requirements in _SPACE_VENVS:
        return _SPACE_VENVS[requirements]
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)], check=True)
    python = venv / "bin" / "python"
    alone = venv.parent / "requirements-only"
    alone.mkdir()
    (alone / "requirements.txt").write_text(offline_requirements(requirements), encoding="utf-8")
    pip = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-index",
                          "-r", "requirements.txt"], cwd=alone, capture_output=True, text=True, timeout=600)
    assert pip.returncode == 0, pip.stderr[-3000:]
    where = subprocess.run([str(python), "-c", "import dialeval; print(dialeval.__file__)"], cwd=folder,
                           env=space_env(0), capture_output=True, text=True, check=True).stdout.strip()
    assert Path(where).is_relative_to(venv), where  # the vendored wheel, not the checkout
    _SPACE_VENVS[requirements] = python
    return python


def space_env(port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DIALEVAL_") and k != "PYTHONPATH"}
    return {**env, "GRADIO_SERVER_PORT": str(port), "DIALEVAL_PROGRESS": "0"}


class RunningSpace:
    """``python app.py`` in ``folder`` on 127.0.0.1:``port``, started at once (other checks run while it
    boots), stopped on exit."""

    def __init__(self, python: Path, folder: Path, log: Path) -> None:
        self.port = free_port()
        self.log = log
        with open(log, "wb") as sink:
            self.proc = subprocess.Popen([str(python), "app.py"], cwd=folder, env=space_env(self.port),
                                         stdout=sink, stderr=subprocess.STDOUT)

    def __enter__(self) -> RunningSpace:
        return self

    def ready(self) -> RunningSpace:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log.read_text()[-3000:]
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return self
            time.sleep(0.5)
        raise AssertionError(f"app.py did not listen within 240 s:\n{self.log.read_text()[-3000:]}")

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def client(self):
        from gradio_client import Client

        return Client(f"http://127.0.0.1:{self.port}/", verbose=False)


def widget_call(client, responses: list[str]) -> dict:
    """/compute of a metric widget by named arguments only: the responses, every other parameter at its
    default (Sem-Ent's references default to empty: the space shipped in the Space folder)."""
    params = client.view_api(print_info=False, return_format="dict")["named_endpoints"]["/compute"]["parameters"]
    assert all(p["parameter_has_default"] for p in params), params  # nothing required, nothing hidden
    assert not any(p["parameter_name"].startswith("param_") for p in params), params
    status, _table, _plot, raw = client.predict(responses="\n".join(responses), api_name="/compute")
    assert status == "Done.", status
    return raw


def card_client_call(folder: Path, url: str) -> dict:
    """Run the card's ``gradio_client`` example (named arguments only) against the Space at ``url``."""
    import re

    text = (folder / "README.md").read_text(encoding="utf-8")
    section = text[text.index("from Python\n"):]
    code = re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)
    assert f'Client("{ORG}/{folder.name}")' in code and "api_name=" in code
    call = code[code.index("client.predict("):]
    assert not re.search(r"\(\s*['\"]", call), call  # no positional argument
    namespace: dict = {}
    exec(code.replace(f'Client("{ORG}/{folder.name}")', f'Client("{url}", verbose=False)'), namespace)
    return namespace


def venv_evaluate(python: Path, folder: Path, kwargs: dict) -> dict:
    """``evaluate.load(<folder>)`` and ``compute`` inside the Space's venv."""
    code = ("import evaluate, json, sys, dialeval\n"
            "m = evaluate.load(sys.argv[1])\n"
            "out = m.compute(**json.loads(sys.argv[2]))\n"
            "print(json.dumps({'file': dialeval.__file__, 'result': out}, default=lambda o: o.tolist()))")
    proc = subprocess.run([str(python), "-c", code, str(folder), json.dumps(kwargs)], cwd=folder.parent,
                          env=space_env(0), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert Path(out["file"]).is_relative_to(python.parent.parent)
    return out["result"]


def test_rehearsal_distinct_n(built, tmp_path):
    folder = built / "spaces" / "distinct_n"
    python = space_python(folder, tmp_path / "venv")
    with RunningSpace(python, folder, tmp_path / "app.log") as space:
        in_venv = venv_evaluate(python, folder, {"predictions": RESPONSES})  # while the app boots
        raw = widget_call(space.ready().client(), RESPONSES)
        card = card_client_call(folder, f"http://127.0.0.1:{space.port}/")
    direct = dialeval.load("distinct_n").compute(predictions=RESPONSES)
    example = registry.get("distinct_n").example["predictions"]
    assert card["status"] == "Done." and card["result"] == dialeval.load("distinct_n").compute(predictions=example)
    # Hand-computed: 10 unigrams (7 distinct), 7 bigrams (6 distinct), 4 trigrams (all distinct).
    assert (raw["distinct_1"], raw["distinct_2"], raw["distinct_3"]) == (7 / 10, 6 / 7, 1.0)
    assert raw == direct
    assert in_venv == direct


def test_rehearsal_sem_ent(built, tmp_path):
    folder = built / "spaces" / "sem_ent"
    python = space_python(folder, tmp_path / "venv")
    space_dir = folder / "semantic_space"
    with RunningSpace(python, folder, tmp_path / "app.log") as space:
        in_venv = venv_evaluate(python, folder, {"predictions": RESPONSES, "space": str(space_dir)})
        raw = widget_call(space.ready().client(), RESPONSES)  # nothing pasted: the Space's own fitted space
        card = card_client_call(folder, f"http://127.0.0.1:{space.port}/")
    assert card["status"] == "Done." and card["result"]["num_predictions"] == 5
    direct = dialeval.load("sem_ent").compute(predictions=RESPONSES, space=str(space_dir))
    fitted = json.loads((space_dir / "space.json").read_text(encoding="utf-8"))
    assert raw["k"] == fitted["config"]["k"] == 20
    assert f"space:{fitted['fingerprint']}" in raw["signature"]  # the fitted space shipped in the Space folder
    assert raw["sem_ent"] == pytest.approx(direct["sem_ent"], abs=1e-9)
    assert raw["cluster_distribution"] == pytest.approx(direct["cluster_distribution"], abs=1e-12)
    # three responses: at most three occupied clusters, each holding a multiple of 1/3
    assert sorted(round(p * 3) for p in raw["cluster_distribution"] if p) in ([3], [1, 2], [1, 1, 1])
    assert in_venv["sem_ent"] == pytest.approx(direct["sem_ent"], abs=1e-9)


def test_rehearsal_demo(built, tmp_path):
    from dialeval.demo import INPUT_ORDER, example_texts, load_examples

    folder = built / "spaces" / hub.DEMO_NAME
    python = space_python(folder, tmp_path / "venv")
    examples = load_examples(resource_path("examples"))
    title = next(iter(examples))
    with RunningSpace(python, folder, tmp_path / "app.log") as space:
        client = space.ready().client()
        loaded = client.predict(title=title, api_name="/load_example")  # examples are package data of the wheel
        params = client.view_api(print_info=False, return_format="dict")["named_endpoints"]["/evaluate"]["parameters"]
        assert [p["parameter_name"] for p in params][:len(INPUT_ORDER)] == list(INPUT_ORDER)
        assert all(p["parameter_has_default"] for p in params)
        result = client.predict(responses="\n".join(RESPONSES), use_distinct_n=True, draw_plots=False,
                                api_name="/evaluate")  # every other metric is unticked by default
        card = card_client_call(folder, f"http://127.0.0.1:{space.port}/")
    assert card["status"].startswith("**"), card["status"]
    card_rows = {(r[0], r[1]): r[2] for r in card["table"]["data"]}
    assert card_rows[("distinct_n", "distinct_1")] == 7 / 10  # the card's responses are RESPONSES
    assert loaded[0].startswith("**Example loaded:**") and list(loaded[1:]) == example_texts(examples[title])
    rows = {(r[0], r[1]): r[2] for r in result[1]["data"]}
    direct = dialeval.load("distinct_n").compute(predictions=RESPONSES)
    assert rows[("distinct_n", "distinct_1")] == 7 / 10
    assert {k: v for (m, k), v in rows.items() if m == "distinct_n"} == {
        k: v for k, v in direct.items() if isinstance(v, float)}
