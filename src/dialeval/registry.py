"""The metric registry: each metric declares itself once, and everything else reads the declaration.

A metric is a folder ``<package>/<name>/`` holding ``__init__.py`` (one :class:`MetricDeclaration`
bound to ``METRIC``), the ``evaluate`` script ``<name>.py`` and its card ``README.md``. Built-in
metrics live in :mod:`dialeval.metrics`; other packages add theirs through the ``dialeval.metrics``
entry-point group (``name = "pkg.metrics.toy"``) or, without installing, through
``DIALEVAL_METRIC_PACKAGES=pkg.metrics.toy,other.pkg`` (a module with ``METRIC``, or a package whose
subpackages each have one). ``dialeval.load``, ``dialeval score``, the CLI help, the demo, the Space
widgets, meta-evaluation and ``dialeval hub build`` all iterate :func:`declarations`.

Declarations stay import-light: the module class, plot and probe are ``"module:attribute"`` strings
resolved on first use, so listing metrics imports neither ``evaluate`` nor torch. Options and their checks live in
:mod:`dialeval.registry_options` (re-exported here).
"""

from __future__ import annotations

import fnmatch
import importlib
import json
import os
import pkgutil
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import metadata, resources
from pathlib import Path
from typing import Any

from dialeval.registry_options import (  # noqa: F401 - re-exported: the options are part of the registry
    NUMBER_TYPES,
    OPTION_TYPES,
    Option,
    check_options,
)
from dialeval.resources import resource_path

INPUT_KINDS = {
    "responses": "a list of responses",
    "response_sets": "a list of response sets (each a list of responses)",
    "dialogues": "a list of dialogues (each a list of turns)",
    "turns": "contexts (lists of turns) with one response each",
    "speakers": "predicted and gold speaker lists, one per story",
    "story_turns": "generated and gold dialogue turns, one list per story",
    "references": "responses with a human reference each (a string, or a list of several)",
}
#: The levels a meta-evaluation row can be at: a set of responses, a turn (context + response), a dialogue.
META_LEVELS = ("set", "turn", "dialog")
# Bounds of the options that size work (declared per option with ``minimum``/``maximum``): no single request
# may ask for more. Each is far above any published setting (n ≤ 5, batches ≤ 256, k ≤ 100).
MAX_ORDER = 16  #: n-gram order (memory grows with the order: one n-tuple per token and order)
MAX_VOCAB = 10**18  #: EAD's vocabulary size (arithmetic only; the formula is exact up to here)
MAX_COUNT = 10**12  #: a count threshold
MAX_WORKERS = 256  #: tokenizer worker processes
MAX_BATCH = 4096  #: items per model batch
MAX_TOKENS = 1_048_576  #: tokens per batch (token budget)
MAX_LENGTH = 131_072  #: tokens per model input
MAX_TURNS = 100_000  #: turns kept of a history
MAX_CLUSTERS = 10_000  #: semantic clusters
MAX_EXAMPLES = 1_000  #: examples shown per cluster
MAX_SEEDS = 1_000  #: restarts of a randomised fit (each one a full fit)
#: A meta-evaluation adapter: dataset rows -> {"scores": one float per row, "signature": the metric's own}.
Adapter = Callable[[list[dict[str, Any]]], dict[str, Any]]


def response_sets(rows: list[dict[str, Any]]) -> list[list[str]]:
    """The response sets of meta-evaluation rows (each ``{"responses": [...], ...}``): what a set-level
    :data:`Adapter` scores."""
    return [list(r["responses"]) for r in rows]


ENTRY_POINT_GROUP = "dialeval.metrics"
PACKAGES_ENV = "DIALEVAL_METRIC_PACKAGES"


@dataclass(frozen=True)
class MetricDeclaration:
    """Everything dialeval needs to know about a metric, written once.

    ``inputs`` is one of :data:`INPUT_KINDS`; ``module`` is ``"pkg.module:Class"`` (the
    ``evaluate.Metric`` subclass); ``model_option`` names the option that takes a model and ``models``
    the short list offered (first = offline default); ``probe`` is ``"pkg.module:function"`` returning
    why a model cannot load here (or ``None``); ``plot`` is ``"pkg.module:function"`` drawing a result;
    ``settings`` are result keys that are configuration (shown as settings, not scores); ``units`` map
    result keys (``fnmatch`` patterns) to the unit shown beside their values (``bits``, ``nats``); ``example``
    maps the ``compute`` input names to a worked example; ``ui_options`` are fixed ``compute`` options
    the UI passes (e.g. ``return_probabilities``); ``references_option`` is the option that takes the
    UI's reference responses; ``resources`` maps options to packaged folders under
    ``dialeval/resources/`` that the UI passes when no references are given (see :meth:`resource`);
    ``loader`` is ``"pkg.module:function"`` called as ``function(model, device=..., dtype=...)`` to load the
    metric's model into the process-wide cache (the Space places the models it offers on CUDA at import with it);
    ``extras`` are the dialeval extras ``compute`` needs beyond the core install (``models`` is implied by
    ``model_option``), which the metric's Hub Space installs; ``system_packages`` are Debian packages it needs (its Space's
    ``packages.txt``). ``meta_levels`` are the row levels
    (:data:`META_LEVELS`) ``dialeval meta-eval`` and the leaderboard score the metric on, ``meta_requires`` the row
    fields that must be present and non-empty (e.g. ``("reference",)``), ``meta_protocols`` the dataset protocols
    it applies to (``sets``, ``pairs``, ``rated``; empty: any); a dataset fits when its config's level, protocol
    and row fields do (:func:`dialeval.meta.sources.fits`). ``meta_adapter`` is ``"pkg.module:factory"`` with
    ``factory(options, config)`` returning a function from rows to ``{"scores", "signature"}``; ``config`` is the
    rows' level (``turn``/``dialog``; a set dataset's config name), a factory with a ``quality`` parameter also
    gets the dataset's overall quality and one with a ``rubric`` parameter the rubric text the dataset declares
    for it; ``meta_variants`` are extra leaderboard rows of the metric with fixed options, e.g.
    ``{"<name>_1": {"max_order": 1}}``; an entry under the metric's own name keeps its plain row beside them (default, for ``response_sets`` metrics: load the metric and ``compute`` the rows' response sets);
    ``meta_whole_set`` are options that, when true, make a row's score depend on the other rows (BERTScore's ``idf``:
    weights from every reference), so the leaderboard scores the whole set in one call, as meta-eval does. ``scale_out`` is ``"pkg.module:function"`` returning how the Ray engine runs the metric
    (``{"kind": "corpus", "plan", "state_kwargs", "state", "merge", "finish"}`` for mergeable Arrow states, or
    ``{"kind": "items", ...}`` for per-item scores; see :mod:`dialeval.distributed`); ``None``: one process only.
    ``item_column`` names the per-item column it writes on Ray (default: the metric's name). ``core`` is
    ``"pkg.module:function"``, the metric's evaluate-free compute (validates once, returns the result with its
    signature), called with the inputs and options as keywords, plus ``config=`` for metrics with several
    configs: the module class adapts to it, and ``dialeval score`` calls it directly (no ``evaluate``).
    """

    name: str
    title: str
    summary: str
    papers: tuple[str, ...]
    urls: tuple[str, ...]
    inputs: str
    module: str
    options: tuple[Option, ...] = ()
    configs: tuple[str, ...] = ("default",)
    ui_config: str | None = None
    model_option: str | None = None
    models: tuple[str, ...] = ()
    probe: str | None = None
    loader: str | None = None
    plot: str | None = None
    settings: tuple[str, ...] = ()
    units: dict[str, str] = field(default_factory=dict)
    example: dict[str, Any] = field(default_factory=dict)
    ui_options: dict[str, Any] = field(default_factory=dict)
    references_option: str | None = None
    resources: dict[str, str] = field(default_factory=dict)
    emoji: str = "📏"
    tags: tuple[str, ...] = ()
    order: int = 100
    package: str = ""
    extras: tuple[str, ...] = ()
    system_packages: tuple[str, ...] = ()
    meta_levels: tuple[str, ...] = ()
    meta_requires: tuple[str, ...] = ()
    meta_protocols: tuple[str, ...] = ()
    meta_adapter: str | None = None
    meta_datasets: tuple[str, ...] = ()  # replaced by meta_levels/meta_requires: refused with the fix
    meta_variants: dict[str, dict[str, Any]] = field(default_factory=dict)
    meta_whole_set: tuple[str, ...] = ()
    scale_out: str | None = None
    core: str | None = None
    item_column: str | None = None

    def unit(self, key: str) -> str:
        """The unit of result key ``key`` (see ``units``), else ``""``."""
        return next((unit for pattern, unit in self.units.items() if fnmatch.fnmatchcase(key, pattern)), "")

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"metric name {self.name!r} must be a Python identifier (it names the script).")
        if self.inputs not in INPUT_KINDS:
            raise ValueError(f"metric {self.name!r}: inputs must be one of {sorted(INPUT_KINDS)}, got {self.inputs!r}.")
        names = [o.name for o in self.options]
        if len(set(names)) != len(names):
            raise ValueError(f"metric {self.name!r} declares an option twice: {names}.")
        if self.model_option is not None and self.model_option not in names:
            raise ValueError(f"metric {self.name!r}: model_option {self.model_option!r} is not among its options.")
        for option in (self.references_option, *self.resources):
            if option is not None and option not in names:
                raise ValueError(f"metric {self.name!r}: {option!r} (references_option/resources) is not among "
                                 "its options; declare it in options=.")
        self._check_meta()

    def _check_meta(self) -> None:
        where = f"metric {self.name!r}"
        if self.meta_datasets:
            raise TypeError(f"{where}: meta_datasets is replaced by a declaration by kind: meta_levels=('turn',) "
                            "(or 'set', 'dialog') and meta_requires=('reference',) for row fields it needs.")
        for name in ("meta_levels", "meta_requires", "meta_protocols"):
            if isinstance(getattr(self, name), str):
                raise TypeError(f"{where}: {name} must be a tuple, e.g. ({getattr(self, name)!r},), not a string.")
        unknown = sorted(set(self.meta_levels) - set(META_LEVELS))
        if unknown:
            raise ValueError(f"{where}: meta_levels {unknown} are not among {list(META_LEVELS)}.")
        if self.meta_adapter is not None and not self.meta_levels:
            raise ValueError(f"{where}: meta_adapter without meta_levels would never be used; name the levels it "
                             f"scores ({list(META_LEVELS)}).")
        if self.meta_levels and self.meta_adapter is None and self.inputs != "response_sets":
            raise ValueError(f"{where}: meta_levels need a meta_adapter (only response_sets metrics have a default "
                             "one).")

    # -- derived facts --------------------------------------------------------------------------
    def option_defaults(self) -> dict[str, Any]:
        """``{option: default}``, the ``OPTIONS`` of the module class."""
        return {o.name: o.default for o in self.options}

    def option(self, name: str) -> Option:
        for o in self.options:
            if o.name == name:
                return o
        raise KeyError(name)

    @property
    def needs_model(self) -> bool:
        return self.model_option is not None

    @property
    def script_dir(self) -> Path:
        """The folder holding ``<name>.py`` and ``README.md`` (read through ``importlib.resources``)."""
        folder = resources.files(self.package) if self.package else None
        if folder is None:
            raise FileNotFoundError(f"metric {self.name!r} has no package to read its script from.")
        path = Path(str(folder))
        if not (path / f"{self.name}.py").is_file():
            raise FileNotFoundError(f"metric script {self.name}.py is missing from {path}; reinstall the package "
                                    "that declares it.")
        return path

    def card(self) -> str:
        """The metric card (``README.md``), front matter included."""
        return (self.script_dir / "README.md").read_text(encoding="utf-8")

    @property
    def citation(self) -> str:
        """The BibTeX of the metric's papers: the card's ```` ```bibtex ```` block (declared once, in the card)."""
        card = self.card()
        start = card.find("```bibtex")
        if start < 0:
            return ""
        body = card[start + len("```bibtex"):]
        return body[: body.find("```")].strip() + "\n"

    def resource(self, option: str) -> Path | None:
        """The packaged folder the UI passes as ``option`` (``resources[option]`` under
        ``dialeval/resources/``), or ``None`` when absent; ``$DIALEVAL_<NAME>_<OPTION>`` overrides it
        (e.g. ``DIALEVAL_SEM_ENT_SPACE``)."""

        env = os.environ.get(f"DIALEVAL_{self.name}_{option}".upper())
        candidates = [Path(env)] if env else []
        if option in self.resources:
            candidates.append(resource_path(self.resources[option]))
        return next((c for c in candidates if c.is_dir()), None)

    def module_class(self) -> type:
        return resolve(self.module)

    def plot_function(self) -> Callable[[dict[str, Any]], Any] | None:
        return resolve(self.plot) if self.plot else None

    def probe_function(self) -> Callable[[str], str | None] | None:
        return resolve(self.probe) if self.probe else None

    def loader_function(self) -> Callable[..., Any] | None:
        return resolve(self.loader) if self.loader else None

    def meta_adapter_factory(self) -> Callable[..., Any] | None:
        return resolve(self.meta_adapter) if self.meta_adapter else None

    def core_function(self) -> Callable[..., dict[str, Any]]:
        """The metric's evaluate-free compute (see ``core``)."""
        if not self.core:
            raise ValueError(f"metric {self.name!r} declares no core function; compute it with dialeval.load.")
        return resolve(self.core)

    def scale_out_hooks(self) -> dict[str, Any] | None:
        """The functions the Ray engine runs this metric with (see ``scale_out``), or ``None``."""
        return resolve(self.scale_out)() if self.scale_out else None


def resolve(target: str) -> Any:
    """``"pkg.module:attr.sub"`` → the object."""
    module_name, _, attr = target.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split(".") if attr else []:
        obj = getattr(obj, part)
    return obj


def declare(package: str, **fields: Any) -> MetricDeclaration:
    """Build a declaration for the metric folder ``package`` (pass ``__name__`` from its ``__init__``)."""
    return MetricDeclaration(package=package, **fields)


# -- discovery ---------------------------------------------------------------------------------------
_LOCK = threading.Lock()
_CACHE: dict[str, MetricDeclaration] | None = None
_CACHE_KEY: tuple[Any, ...] | None = None


def _declarations_in(module_name: str) -> list[MetricDeclaration]:
    """The ``METRIC`` of ``module_name``, or of each subpackage when it is a package of metrics."""
    module = importlib.import_module(module_name)
    found = getattr(module, "METRIC", None)
    if isinstance(found, MetricDeclaration):
        return [found]
    out = []
    for info in pkgutil.iter_modules(getattr(module, "__path__", [])):
        if info.ispkg:
            out.extend(_declarations_in(f"{module_name}.{info.name}"))
    return out


def _plugin_modules() -> list[tuple[str, str]]:
    """``(module, where it is named)`` of every plugin: the entry points, then ``$DIALEVAL_METRIC_PACKAGES``."""
    names = [(ep.value, f"entry point {ep.name!r} of the {ENTRY_POINT_GROUP} group")
             for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)]
    names += [(n.strip(), PACKAGES_ENV) for n in os.environ.get(PACKAGES_ENV, "").split(",") if n.strip()]
    return names


def _plugin_declarations(module_name: str, where: str) -> list[MetricDeclaration]:
    """A plugin's declarations; a module that does not import is one line naming it and where it is named."""
    try:
        return _declarations_in(module_name)
    except ImportError as exc:
        raise ValueError(f"{where}: the metric package {module_name!r} does not import ({type(exc).__name__}: "
                         f"{exc}); fix its name or install it.") from None


def declarations() -> dict[str, MetricDeclaration]:
    """Every known metric, ``{name: declaration}``, built-ins first (by ``order``), then plugins."""
    global _CACHE, _CACHE_KEY
    key = (os.environ.get(PACKAGES_ENV, ""),)
    with _LOCK:
        if _CACHE is not None and _CACHE_KEY == key:
            return _CACHE
        found = {d.name: d for d in _declarations_in("dialeval.metrics")}
        builtin = set(found)
        for module_name, where in _plugin_modules():
            for decl in _plugin_declarations(module_name, where):
                if decl.name in builtin:
                    raise ValueError(f"{where}: the plugin metric {decl.name!r} ({decl.package}) has the name of a "
                                     "built-in metric; rename the plugin's metric.")
                if decl.name in found and found[decl.name] != decl:
                    raise ValueError(f"metric {decl.name!r} is declared twice ({found[decl.name].package} and "
                                     f"{decl.package}); rename one.")
                found[decl.name] = decl
        clash = next((f"{d.name}'s variant {v!r}" for d in found.values() for v in d.meta_variants
                      if v in found and v != d.name), None)  # a metric may name itself: its own default row
        if clash:
            raise ValueError(f"{clash} has the name of a metric; rename the variant.")
        _CACHE = dict(sorted(found.items(), key=lambda kv: (kv[1].order, kv[0])))
        _CACHE_KEY = key
        return _CACHE


def metric_names() -> tuple[str, ...]:
    return tuple(declarations())


def get(name: Any) -> MetricDeclaration:
    """The declaration of ``name``; a clear ``ValueError`` listing the known metrics otherwise."""
    decls = declarations()
    if not isinstance(name, str) or name not in decls:
        raise ValueError(f"unknown metric {name!r}; known metrics: {', '.join(decls)}.")
    return decls[name]


def meta_evaluable() -> dict[str, MetricDeclaration]:
    """The metrics ``dialeval meta-eval`` and the leaderboard can score (those declaring ``meta_levels``)."""
    return {n: d for n, d in declarations().items() if d.meta_levels}


def meta_rows() -> dict[str, tuple[MetricDeclaration, dict[str, Any]]]:
    """The leaderboard's default rows: ``{row: (declaration, fixed options)}``, one per meta-evaluable metric, or
    one per entry of its ``meta_variants``."""
    rows: dict[str, tuple[MetricDeclaration, dict[str, Any]]] = {}
    for name, decl in meta_evaluable().items():
        for row, fixed in (decl.meta_variants or {name: {}}).items():
            rows[row] = (decl, dict(fixed))
    return rows


def meta_names() -> dict[str, tuple[MetricDeclaration, dict[str, Any]]]:
    """Every name the meta-evaluation takes: the default rows (:func:`meta_rows`, variants included) and each
    meta-evaluable metric by its own name (no fixed options)."""
    return {**meta_rows(), **{n: (d, {}) for n, d in meta_evaluable().items()}}


def meta_row(name: str) -> tuple[MetricDeclaration, dict[str, Any]] | None:
    """``(declaration, fixed options)`` of a metric or metric-variant name, ``None`` when it is neither."""
    decl = declarations().get(name)
    if decl is not None:
        return decl, {}
    return meta_rows().get(name)


def by_input(kind: str) -> list[MetricDeclaration]:
    """The metrics that read ``kind`` inputs (see :data:`INPUT_KINDS`)."""
    return [d for d in declarations().values() if d.inputs == kind]


def parse_metric_args(pairs: Sequence[str] | None) -> dict[str, Any]:
    """``["n=[1,2]", "model=/path", "batch_size=8"]`` → options; values parse as JSON when they can."""
    out: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--metric-arg {pair!r} must look like key=value (e.g. model=/path/to/model).")
        try:
            out[key] = json.loads(raw)
        except json.JSONDecodeError:
            out[key] = raw
    return out
