"""The release workflow of CHANGELOG.md: ``python -m build`` writes an sdist and a wheel named by the one
version in ``_version.py``, ``twine check --strict`` accepts both, and the install line a card gets from
``hub build --from-index`` names that same release."""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import dialeval
from dialeval.hub import repos as hub

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_build_and_twine_check(tmp_path):
    version = (REPO / "src" / "dialeval" / "_version.py").read_text(encoding="utf-8")
    assert re.fullmatch(r'__version__ = "(\d+\.\d+\.\d+)"\n', version)
    assert f'"{dialeval.__version__}"' in version
    build = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(tmp_path), str(REPO)],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-3000:]
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [f"dialeval-{dialeval.__version__}-py3-none-any.whl", f"dialeval-{dialeval.__version__}.tar.gz"]
    check = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *map(str, tmp_path.iterdir())],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout.count("PASSED") == 2
    with zipfile.ZipFile(tmp_path / names[0]) as whl:
        meta = whl.read(f"dialeval-{dialeval.__version__}.dist-info/METADATA").decode()
    assert f"\nVersion: {dialeval.__version__}\n" in meta
    with tarfile.open(tmp_path / names[1]) as sdist:
        assert f"dialeval-{dialeval.__version__}/CHANGELOG.md" in sdist.getnames()


def test_changelog_and_card_install_line_match_the_version():
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    released = re.findall(r"^## (\d+\.\d+\.\d+)", changelog, flags=re.M)
    assert released and released[0] == dialeval.__version__
    install = hub.Install(None)
    assert install.requirement(["space"], "acme/x") == f"dialeval[space]=={dialeval.__version__}"
    assert install.command("acme/x", ["models"]) == f'pip install "dialeval[models]=={dialeval.__version__}"'
