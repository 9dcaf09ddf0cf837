"""Issue 34.4: the Spaces' torch is chosen (``hub build --torch``), and the hardware ``upload.sh`` requests is checked
against it before anything is uploaded."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dialeval import registry
from dialeval.hub import repos as hub
from dialeval.hub.space_hardware import check_hardware, flavours

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO / "src"), os.environ.get("PYTHONPATH")]))}


def requirements(folder: Path) -> list[str]:
    return [line for line in (folder / "requirements.txt").read_text(encoding="utf-8").splitlines()
            if line and not line.startswith("#")]


def test_demo_space_pins_the_tested_cpu_torch_by_default(tmp_path):
    import torch

    repo = hub.write_demo_space(tmp_path / "demo", "acme", hub.Install(None))
    lines = requirements(repo.folder)
    # the build install.sh pins and this suite runs, from PyTorch's CPU index (not PyPI's CUDA 13 default)
    assert "torch==2.13.0" in (REPO / "install.sh").read_text(encoding="utf-8") and torch.__version__ == "2.13.0+cpu"
    assert lines == ["--extra-index-url https://download.pytorch.org/whl/cpu", "torch==2.13.0+cpu",
                     f"dialeval[models,space]=={hub.__version__}"]


@pytest.mark.parametrize("build, expected", [
    ("cu126", ["--extra-index-url https://download.pytorch.org/whl/cu126", "torch==2.9.1+cu126"]),
    ("image", []),  # ZeroGPU: the image's torch (dialeval[models] asks only torch>=2.4)
])
def test_other_torch_builds(tmp_path, build, expected):
    repo = hub.write_demo_space(tmp_path / "demo", "acme", hub.Install(None, torch=build))
    assert requirements(repo.folder) == [*expected, f"dialeval[models,space]=={hub.__version__}"]
    model = hub.write_metric_space(registry.get("sem_ent"), tmp_path / "sem_ent", "acme", hub.Install(None, torch=build))
    assert requirements(model.folder)[:-1] == expected
    lexical = hub.write_metric_space(registry.get("distinct_n"), tmp_path / "dist", "acme", hub.Install(None, torch=build))
    assert requirements(lexical.folder) == [f"dialeval[space]=={hub.__version__}"]  # no torch at all


def test_unknown_torch_build_is_one_line():
    with pytest.raises(ValueError, match=r"^--torch 'cu999' is not a torch build; choose one of \['cpu', 'cu126', 'image'\]\.$"):
        hub.build("acme", "unused-out", torch="cu999")
    done = subprocess.run([sys.executable, "-m", "dialeval", "hub", "build", "--org", "acme", "--out", "x",
                           "--torch", "cu999"], env=ENV, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "--torch: invalid choice: 'cu999'" in done.stderr


def test_flavour_must_suit_the_torch_build():
    assert {"cpu-basic", "t4-small", "zero-a10g"} <= set(flavours())
    for flavour, build in [("cpu-basic", "cpu"), ("t4-small", "cu126"), ("a10g-small", "cu126"), ("zero-a10g", "image")]:
        check_hardware(flavour, build)
    with pytest.raises(ValueError, match=r"'t4-small' does not suit .*--torch cpu.*--torch cu126"):
        check_hardware("t4-small", "cpu")
    with pytest.raises(ValueError, match=r"'zero-a10g' does not suit .*--torch image"):
        check_hardware("zero-a10g", "cu126")
    with pytest.raises(ValueError, match=r"'t4-smal' is not a Space hardware name"):
        check_hardware("t4-smal", "cu126")


@pytest.mark.parametrize("flavour, code", [("", 0), ("cpu-basic", 0), ("t4-small", 2), ("t4-smal", 2)])
def test_upload_script_checks_the_flavour_before_uploading(tmp_path, flavour, code):
    script = tmp_path / "upload.sh"
    script.write_text("set -euo pipefail\n" + hub.hardware_check("cpu") + "echo uploaded\n", encoding="utf-8")
    done = subprocess.run(["bash", str(script)], env={**ENV, "DIALEVAL_SPACE_HARDWARE": flavour},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == code, done.stderr
    assert ("uploaded" in done.stdout) == (code == 0)  # a wrong flavour stops before any upload
    if code:
        assert done.stderr.count("\n") == 1 and done.stderr.startswith(f"upload.sh: DIALEVAL_SPACE_HARDWARE='{flavour}'")
