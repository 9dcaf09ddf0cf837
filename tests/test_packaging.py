"""The wheel carries everything dialeval reads at run time: installed with ``pip install --target`` into an
empty folder and imported with only that folder (plus the dependencies' site-packages) on ``sys.path``,
every declared metric loads by bare name and computes on real text."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

import dialeval
from dialeval import registry
from dialeval.hub import repos as hub
from dialeval.models.runtime import cache_dir

REPO = Path(__file__).resolve().parents[1]
RESPONSES = ["i like tea .", "i like coffee .", "no thanks"]

# Runs in a fresh interpreter without `site` (no .pth files: the checkout's editable install stays off
# sys.path); PYTHONPATH is the --target folder, then the dependencies' site-packages.
PROBE = r"""
import json, sys
import dialeval
from dialeval import registry

overrides = json.loads(sys.argv[1])
out = {"file": dialeval.__file__, "path": sys.path, "results": {}}
for name, decl in registry.declarations().items():
    kwargs = dict(overrides.get(name, decl.example))
    for option in decl.resources:  # packaged data (Sem-Ent's fitted space), read from the installed wheel
        kwargs[option] = str(decl.resource(option))
    config = decl.ui_config if decl.ui_config in decl.configs else None
    out["results"][name] = dialeval.load(name, config).compute(**kwargs)

# fit a Sem-Ent space on the bundled example responses, save it, and score with it
from pathlib import Path
from dialeval.demo import build_demo, default_examples_dir, load_examples
from dialeval.semantic.space import SemanticSpace

work = Path(sys.argv[2])
examples = load_examples(default_examples_dir())
refs = list(dict.fromkeys(r for e in examples.values() for r in e["responses"]))
SemanticSpace.fit(refs, k=2, device="cpu").save(work / "space")
out["fitted"] = dialeval.load("sem_ent").compute(predictions=refs[:10], space=str(work / "space"))
out["examples"] = sorted(examples)
out["demo_title"] = build_demo().title  # the demo builds from the installed package alone

# and the Hub folders can be written from it (no checkout, so from the index)
from dialeval.hub import repos as hub
repos = hub.build("acme", work / "hub", from_index=True, only=[*registry.metric_names(), hub.DEMO_NAME])
out["hub"] = sorted(r.folder.name for r in repos)
print(json.dumps(out, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o)))
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    return hub.build_wheel(tmp_path_factory.mktemp("wheel"))


def test_wheel_carries_scripts_cards_and_resources(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert wheel.name == f"dialeval-{dialeval.__version__}-py3-none-any.whl"
    for name in registry.declarations():
        assert f"dialeval/metrics/{name}/{name}.py" in names, name
        assert f"dialeval/metrics/{name}/__init__.py" in names, name
    for name in ("distinct_n", "ent_n", "low_frequency", "dialspk", "sem_ent", "nli_diversity", "full_followup"):
        assert f"dialeval/metrics/{name}/README.md" in names, name
    for path in ("resources/semantic_space/space.json", "resources/semantic_space/space.safetensors",
                 "resources/examples/1_contest.json", "spaces/metric/app.py", "spaces/demo/app.py",
                 "spaces/demo/README.md", "datasets/README.md", "py.typed"):
        assert f"dialeval/{path}" in names, path
    for dataset in ("contest", "dailydialog", "dailydialog_plusplus", "fed", "dialstory"):
        assert f"dialeval/datasets/cards/{dataset}/README.md" in names, dataset
    for split in ("dialgen", "dialspk", "raw"):
        assert any(n.startswith(f"dialeval/datasets/cards/dialstory/sample/{split}/") for n in names), split
    assert not [n for n in names if ".data/" in n or "__pycache__" in n]  # no share/ data files, no bytecode
    meta = zipfile.ZipFile(wheel).read(f"dialeval-{dialeval.__version__}.dist-info/METADATA").decode()
    assert "License-Expression: MIT" in meta and "License ::" not in meta
    requires = [line.split(": ", 1)[1] for line in meta.splitlines() if line.startswith("Requires-Dist: ")]
    assert "evaluate<0.5,>=0.4.6" in requires
    assert 'torch>=2.4; extra == "models"' in requires
    exact = [r for r in requires if re.search(r"==\s*[\d.]+\s*(;|$)", r)]
    assert not exact, exact  # ranges only (== X.Y.* is a range): never replace a researcher's own torch


def test_wheel_in_target_folder_loads_and_computes_every_metric(wheel, tmp_path):
    from dialeval.testing.blenderbot import build_tiny_blenderbot
    from dialeval.testing.roberta import tiny_nli_model

    target = tmp_path / "target"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
                   check=True, capture_output=True)
    nli = str(tiny_nli_model(tmp_path / "nli"))
    lm = str(build_tiny_blenderbot(tmp_path / "lm"))
    overrides = {
        "distinct_n": {"predictions": RESPONSES}, "ent_n": {"predictions": RESPONSES},
        "dialspk": {"predictions": [["A", "B", "A"], ["C"]], "references": [["A", "B", "B"], ["C"]]},
        "sem_ent": {"predictions": RESPONSES},
        "nli_diversity": {**registry.get("nli_diversity").example, "model": nli},
        "full_followup": {**registry.get("full_followup").example, "model": lm},
    }
    # the wheel's folder first, then the interpreter's site-packages folders (a venv's and, with
    # --system-site-packages, its base's): `-S` skips .pth files, so the editable checkout stays out of sight
    site_dirs = [sysconfig.get_paths()["purelib"], *(p for p in sys.path if p.endswith("site-packages"))]
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join([str(target), *dict.fromkeys(site_dirs)]),
           "HOME": str(tmp_path), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_EVALUATE_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf"), "DIALEVAL_PROGRESS": "0",
           # the model cache the rest of the run fills (converted GGUF weights, exported ONNX graphs): a private
           # one converted and exported the default quality_vendi model a second time (~90 s). The cold path runs
           # where the cache is empty (a fresh machine's first model test; test_onnx_backend's exports into tmp)
           "DIALEVAL_CACHE": str(cache_dir())}
    proc = subprocess.run([sys.executable, "-S", "-c", PROBE, json.dumps(overrides), str(tmp_path)], capture_output=True,
                          text=True, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert Path(out["file"]).is_relative_to(target)  # the installed copy, not the checkout
    assert str(REPO / "src") not in out["path"]
    results = out["results"]
    assert set(results) == set(registry.metric_names())
    for name, result in results.items():
        assert result["signature"].startswith(f"{name}|") and f"version:{dialeval.__version__}" in result["signature"]
    # Hand-computed: 10 unigrams (7 distinct), 7 bigrams (6 distinct), 4 trigrams (all distinct).
    d = results["distinct_n"]
    assert (d["distinct_1"], d["distinct_2"], d["distinct_3"]) == (7 / 10, 6 / 7, 1.0)
    # Ent-1 over the unigram counts {i:2, like:2, .:2, tea, coffee, no, thanks}: -Σ p log2 p
    assert results["ent_n"]["ent_1"] == pytest.approx(3 * 0.2 * 2.321928094887362 + 4 * 0.1 * 3.321928094887362)
    assert (results["dialspk"]["dac"], results["dialspk"]["sac"]) == (3 / 4, 1 / 2)  # 3 of 4 turns, 1 of 2 stories
    sem = results["sem_ent"]
    assert sem["k"] == 20 and sum(sem["cluster_distribution"]) == pytest.approx(1.0)
    # the installed wheel's bundled space gives what the checkout's gives
    direct = dialeval.load("sem_ent").compute(predictions=RESPONSES, space=str(registry.get("sem_ent").resource("space")))
    assert sem["sem_ent"] == pytest.approx(direct["sem_ent"], abs=1e-6)
    assert len(results["nli_diversity"]["scores"]) == 2
    assert len(results["full_followup"]["follow_up_scores"]) == 1
    fitted = out["fitted"]
    assert fitted["k"] == 2 and sum(fitted["cluster_distribution"]) == pytest.approx(1.0)
    assert 0.0 <= fitted["sem_ent"] <= math.log(2) + 1e-12
    assert len(out["examples"]) == 3 and out["demo_title"] == "dialeval demo"
    assert out["hub"] == sorted([*registry.metric_names(), hub.DEMO_NAME])
    for name in registry.metric_names():
        folder = tmp_path / "hub" / "spaces" / name
        assert (folder / "app.py").is_file() and (folder / f"{name}.py").is_file()
        reqs = (folder / "requirements.txt").read_text().splitlines()  # after the torch build's lines (hub --torch)
        line = [r for r in reqs if r.startswith("dialeval[")]
        assert line and ("torch==2.13.0+cpu" in reqs) == line[0].startswith("dialeval[models")  # torch with the models extra


def test_the_suite_prints_the_time_of_every_slow_test():
    """CI runs `python -m pytest` as the README says: its output keeps each test's time over a second (a slow
    test shows up by name, e.g. one that waits on an unreachable index)."""
    import tomllib

    addopts = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"][
        "addopts"].split()
    assert "--durations=0" in addopts and "--durations-min=1.0" in addopts
