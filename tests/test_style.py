"""The tree is ruff clean (the same check contributors run)."""

import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_ruff_clean():
    ruff = shutil.which("ruff")
    assert ruff, "ruff is part of the dev extra; run install.sh"
    proc = subprocess.run([ruff, "check", "src", "metrics", "spaces", "datasets_scripts", "tests", "benchmarks", "scripts"], cwd=REPO,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
