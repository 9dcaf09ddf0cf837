"""A metric plugin written for the tests: a package ``name`` on ``sys.path`` (its declaration, an adapter and any
further modules), registered through ``DIALEVAL_METRIC_PACKAGES``."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from dialeval import registry

DECLARATION = '''
from dialeval.registry import Option, declare

METRIC = declare(__name__, name="{name}", title="Test plugin", summary="a test plugin", papers=("none",),
                 urls=("none",), inputs="turns", module="{name}.adapter:Nothing",
                 options=(Option("model", None, "any"), Option("scale", 1.0, "float")), model_option="model",
                 meta_levels=("turn",), meta_adapter="{name}.adapter:factory")
'''


def install_plugin(root: Path, monkeypatch, name: str, files: dict[str, str]) -> Path:
    """Write the package ``name`` under ``root`` with ``files`` (``{"adapter.py": source}``) beside its declaration,
    and register it; returns the package folder."""
    package = root / name
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(textwrap.dedent(DECLARATION.format(name=name)), encoding="utf-8")
    for file, text in files.items():
        (package / file).write_text(textwrap.dedent(text), encoding="utf-8")
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setenv(registry.PACKAGES_ENV, name)
    return package


def forget(name: str) -> None:
    """Drop the plugin's modules so that the next import reads its files again."""
    for module in [m for m in sys.modules if m.split(".")[0] == name]:
        sys.modules.pop(module)
