"""Shared base for dialeval's ``evaluate`` modules: default options given at load time, merged per call,
and input checks that run before ``evaluate`` casts the inputs to Arrow (which would otherwise turn a
bare string into characters and ``5`` into ``"5"`` without a word)."""

from __future__ import annotations

import inspect
import sys
import warnings
from collections.abc import Mapping
from importlib import metadata
from typing import Any, ClassVar

import datasets
import evaluate

from dialeval.io.validation import check_valid_unicode, inputs_checked
from dialeval.registry import MetricDeclaration, check_options


def _kind(feature: Any) -> str | None:
    """``"str"`` for a string column, ``"list[str]"`` for a list-of-strings column, else ``None``."""
    if isinstance(feature, datasets.Value):
        return "str" if feature.dtype == "string" else None
    inner = getattr(feature, "feature", None)
    if isinstance(inner, datasets.Value) and inner.dtype == "string":
        return "list[str]"
    return None


def _matches(value: Any, kind: str) -> bool:
    if kind == "str":
        return isinstance(value, str)
    return isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)


KIND_TEXT = {"str": "a string", "list[str]": "a list of strings"}


def _item_error(name: str, i: int, item: Any, fitting: list[str], first: list[str], wanted: list[str]) -> TypeError:
    """The one-line error for ``name[i]``, which matches none of the ``fitting`` kinds: the inner string that is
    not one, an item of another accepted kind than ``name[0]`` (Arrow takes one kind per column), or its type."""
    if isinstance(item, (list, tuple)) and "list[str]" in fitting:
        j = next((j for j, v in enumerate(item) if not isinstance(v, str)), None)
        if j is not None:
            return TypeError(f"`{name}[{i}][{j}]` is {type(item[j]).__name__} ({item[j]!r:.40}), not a string.")
    other = next((w for w in wanted if _matches(item, w)), None)
    if first and other:
        return TypeError(f"`{name}[{i}]` is {type(item).__name__} ({item!r:.40}), {KIND_TEXT[other]}, but `{name}[0]` "
                         f"is {KIND_TEXT[first[0]]}; give every item the same kind (all strings, or all lists of "
                         "strings).")
    what = " or ".join(KIND_TEXT[w] for w in fitting)
    return TypeError(f"`{name}[{i}]` is {type(item).__name__} ({item!r:.40}), not {what}.")


#: Where the dialeval package (every metric's code) is published.
PACKAGE_URL = "https://pypi.org/project/dialeval/"


def package_license() -> str:
    """The installed dialeval's license (its metadata's ``License-Expression``; MIT)."""
    try:
        meta = metadata.metadata("dialeval")
    except metadata.PackageNotFoundError:  # a source checkout without an install
        return "MIT"
    return meta.get("License-Expression") or meta.get("License") or "MIT"


class DialevalMetric(evaluate.Metric):
    """An ``evaluate.Metric`` whose compute options can also be fixed at load time.

    ``dialeval.load(name, tokenizer="char")`` fixes ``tokenizer`` for every later ``compute``;
    a ``compute(..., tokenizer=...)`` still overrides it. Unknown option names are an error at load time
    and a warning at compute time (``evaluate.combine`` passes one set of options to every module).
    ``OPTIONS`` maps each option to its default and ``CONFIG_NAMES`` lists the accepted configs, both
    derived from ``DECLARATION`` (the metric's registry entry).
    """

    DECLARATION: ClassVar[MetricDeclaration | None] = None
    OPTIONS: ClassVar[dict[str, Any]] = {}
    CONFIG_NAMES: ClassVar[tuple[str, ...]] = ("default",)
    #: Inputs given to ``compute`` alongside the data and passed to ``_compute`` as they are, not stored by
    #: ``add_batch`` (e.g. ``speakers``: one list of names per dialogue, which evaluate's columns cannot hold
    #: beside an optional input).
    CALL_INPUTS: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """``OPTIONS`` and ``CONFIG_NAMES`` come from the class's ``DECLARATION`` (one place for each)."""
        super().__init_subclass__(**kwargs)
        decl = cls.__dict__.get("DECLARATION")
        if decl is not None:
            cls.OPTIONS = decl.option_defaults()
            cls.CONFIG_NAMES = decl.configs

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        config = kwargs.get("config_name", args[0] if args else None) or "default"
        if config == "default" and self.CONFIG_NAMES != ("default",):
            # no config name: the first declared config, alike for evaluate.load(folder or Hub id) and dialeval.load
            config = self.CONFIG_NAMES[0]
            args, kwargs = ((config, *args[1:]), kwargs) if args else (args, {**kwargs, "config_name": config})
        if config not in self.CONFIG_NAMES:
            name = self.DECLARATION.name if self.DECLARATION else type(self).__name__
            raise ValueError(
                f"{type(self).__name__} has configs {list(self.CONFIG_NAMES)}, got {config!r}; "
                + ("load it without a config name." if self.CONFIG_NAMES == ("default",)
                   else f"pass one as the config name, e.g. evaluate.load(PATH_OR_HUB_ID, {self.CONFIG_NAMES[-1]!r}) "
                        f"or dialeval.load({name!r}, {self.CONFIG_NAMES[-1]!r}); without one it is "
                        f"{self.CONFIG_NAMES[0]!r}.")
            )
        self.defaults: dict[str, Any] = dict(self.OPTIONS)
        for key in list(kwargs):
            if key in self.OPTIONS:
                self.defaults[key] = kwargs.pop(key)
        if self.DECLARATION is not None:
            check_options(self.DECLARATION, self.defaults)
        unknown = [k for k in kwargs if k not in _EVALUATE_INIT_ARGS]
        if unknown:
            raise TypeError(
                f"{type(self).__name__} got unknown option(s) {unknown}; known options: {sorted(self.OPTIONS)}."
            )
        super().__init__(*args, **kwargs)
        if self.DECLARATION is not None:  # evaluate names a module after its class (DialSpk → dial_spk)
            self._module_info.module_name = self.DECLARATION.name  # the name of its folder and Hub repo

    def metric_info(self, features: Any, inputs_description: str, description: str | None = None
                    ) -> evaluate.MetricInfo:
        """``evaluate.MetricInfo`` from the declaration: summary, citation (the card's BibTeX block) and URLs
        are declared once, there and in the card, and only read here."""
        decl = self.DECLARATION
        assert decl is not None, f"{type(self).__name__} has no DECLARATION"
        return evaluate.MetricInfo(
            description=description or f"{decl.title}: {decl.summary}.",
            citation=decl.citation,
            inputs_description=inputs_description,
            features=features,
            reference_urls=list(decl.urls),
            homepage=decl.urls[0] if decl.urls else PACKAGE_URL,
            license=package_license(),
            codebase_urls=[u for u in decl.urls if "github.com" in u] or [PACKAGE_URL],
        )

    def reference_info(self) -> evaluate.MetricInfo:
        """The info of a metric reading responses with references (the ``references`` input kind): a reference per
        response, as a string or a list of strings."""
        text = datasets.Value("string")
        return self.metric_info(
            [datasets.Features({"predictions": text, "references": text}),
             datasets.Features({"predictions": text, "references": datasets.Sequence(text)})],
            "predictions: list of responses; references: one reference per response (a string, or a list of "
            "strings). Options: see the card.")

    def _input_kinds(self) -> list[dict[str, str | None]]:
        features = self.info.features
        formats = features if isinstance(features, list) else [features]
        return [{name: _kind(feat) for name, feat in fmt.items()} for fmt in formats]

    def _input_names(self, kinds: list[dict[str, str | None]]) -> set[str]:
        return {name for fmt in kinds for name in fmt}

    def check_inputs(self, inputs: dict[str, Any], kinds: list[dict[str, str | None]] | None = None) -> None:
        """Clear errors for inputs of the wrong shape, before ``evaluate`` converts them."""
        kinds = self._input_kinds() if kinds is None else kinds
        for name, value in inputs.items():
            if value is None or not any(name in k for k in kinds):
                continue
            if isinstance(value, str):
                raise TypeError(f"`{name}` is a single string; pass a list, e.g. [{value[:30]!r}].")
            if isinstance(value, Mapping):
                raise TypeError(f"`{name}` is a {type(value).__name__}; pass a list (e.g. list(d.values())).")
            if not hasattr(value, "__len__") or not hasattr(value, "__getitem__"):
                raise TypeError(f"`{name}` must be a list, got {type(value).__name__}.")
            if len(value) == 0:
                raise ValueError(f"`{name}` is empty; pass at least one item.")
            wanted = [k[name] for k in kinds if k.get(name)]
            if not wanted:
                continue
            first = [w for w in wanted if _matches(value[0], w)]
            fitting = first or wanted
            for i, item in enumerate(value):
                if not any(_matches(item, w) for w in fitting):
                    raise _item_error(name, i, item, fitting, first, wanted)
            check_valid_unicode(value, name)  # skipped for evaluate's own add_batch inside compute

    def _check_call(self, inputs: dict[str, Any], kwargs: dict[str, Any], computing: bool) -> None:
        kinds = self._input_kinds()
        names = self._input_names(kinds)
        given = {k: v for k, v in inputs.items() if k in names}
        if computing and all(v is None for v in given.values()) and getattr(self, "writer", None) is None:
            missing = ", ".join(f"`{n}`" for n in sorted(names))
            raise ValueError(f"{missing} missing or None: pass them to compute(), or call add_batch() first.")
        required = set.intersection(*(set(k) for k in kinds)) if kinds else set()
        absent = sorted(n for n in required if given.get(n) is None)
        present = sorted(n for n, v in given.items() if v is not None)
        if absent and present:
            raise ValueError(f"`{absent[0]}` is None while `{present[0]}` is given; pass `{absent[0]}` too, a list "
                             f"with one item per item of `{present[0]}`.")
        self.check_inputs(given, kinds)
        stray = [k for k, v in inputs.items() if k not in names and v is not None]
        if self.DECLARATION is not None:  # ranges before any work (n=10**22 must not allocate)
            check_options(self.DECLARATION, {k: v for k, v in kwargs.items() if k in self.OPTIONS})
        unknown = [k for k in kwargs if k not in self.OPTIONS and not k.startswith("_")]
        shared = _combined_options(sys._getframe(1)) if unknown else None
        if unknown and (shared is None or set(unknown) - shared):
            bad = sorted(set(unknown) - (shared or set()))
            raise TypeError(f"{type(self).__name__}: unknown option(s) {bad}; its options are {sorted(self.OPTIONS)}"
                            + ("" if shared is None else " (and no module of this evaluate.combine knows them)")
                            + ".")
        if unknown or stray:
            warnings.warn(
                f"{type(self).__name__} ignores {sorted(unknown + stray)}: not among its inputs {sorted(names)} or "
                f"options {sorted(self.OPTIONS)} (fine when evaluate.combine passes another module's option).",
                UserWarning, stacklevel=3,
            )

    def compute(self, *, predictions: Any = None, references: Any = None, **kwargs: Any) -> Any:
        """Check the inputs (clear errors naming the field), then ``evaluate``'s compute.\n"""
        inputs = {"predictions": predictions, "references": references}
        names = self._input_names(self._input_kinds())
        inputs.update({k: kwargs.pop(k) for k in list(kwargs) if k in names})
        call_inputs = {k: kwargs.pop(k) for k in self.CALL_INPUTS if k in kwargs}
        self._check_call(inputs, kwargs, computing=True)
        from dialeval.extras import needs_extras

        with inputs_checked(), needs_extras(self.name):  # scanned above: the core does not scan again; a missing
            return super().compute(**inputs, **self.options(kwargs), **call_inputs)  # package names its extra

    def add_batch(self, *, predictions: Any = None, references: Any = None, **kwargs: Any) -> None:
        """Check the inputs (clear errors naming the field), then ``evaluate``'s add_batch.\n"""
        held = [k for k in self.CALL_INPUTS if k in kwargs]
        if held:
            raise ValueError(f"`{held[0]}` goes to compute(), with one entry per item of every batch added, not to "
                             "add_batch().")
        inputs = {"predictions": predictions, "references": references, **kwargs}
        self._check_call(inputs, {}, computing=False)
        return super().add_batch(predictions=predictions, references=references, **kwargs)

    def options(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """Load-time defaults overridden by this call's options (names unknown here were warned about
        in ``compute``; they are dropped so that ``evaluate.combine`` can share options). ``compute`` passes
        the result on, so every ``_compute`` receives each declared option as an explicit parameter."""
        out = dict(self.defaults)
        out.update({k: v for k, v in kwargs.items() if k in self.OPTIONS or k.startswith("_")})
        return out


def _combined_options(frame: Any) -> set[str] | None:
    """When this call comes from ``evaluate.combine`` (which passes its options to every module), the inputs and
    options any module in it knows; ``None`` for a call on this module alone."""
    for _ in range(8):
        if frame is None:
            return None
        combined = frame.f_locals.get("self")
        if type(combined).__name__ == "CombinedEvaluations":
            break
        frame = frame.f_back
    else:
        return None
    known: set[str] = set()
    for module in getattr(combined, "evaluation_modules", []):
        options = getattr(module, "OPTIONS", None)
        known |= set(options) if options else set(inspect.signature(module._compute).parameters)
        features = module.info.features
        for fmt in features if isinstance(features, list) else [features]:
            known |= set(fmt or ())
    return known


_EVALUATE_INIT_ARGS = {
    "config_name", "keep_in_memory", "cache_dir", "num_process", "process_id", "seed", "experiment_id",
    "hash", "max_concurrent_cache_files", "timeout",
}
