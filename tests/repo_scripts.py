"""A repository script (under ``benchmarks/`` or ``scripts/``) loaded as a module, for the tests of its pure parts."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]


def load_script(relative: str) -> ModuleType:
    """The script at ``REPO/relative`` as a module named after its file; its folder is on ``sys.path`` while it
    loads, so it finds its sibling helpers (``benchmarks/_common.py``)."""
    path = REPO / relative
    sys.path.insert(0, str(path.parent))
    try:
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    return module
