"""Where meta-evaluation data comes from: each dataset declares itself once, in its builder, and everything
else reads the declaration.

A :class:`DatasetDeclaration` says what a meta-evaluation needs to know about a dataset: what one scored row
is (the *protocol*: ``sets`` of responses, positive/negative ``pairs`` or ``rated`` turns and dialogues), the
level of each config (``set``, ``turn``, ``dialog``), the configs the leaderboard scores, the overall quality
of each config (the summary row's), the field naming each row's system, stored metric columns, optional row
fields every row fills (``reference``) and any protocol detail (targets, rounding, chunked caching, rubrics,
published numbers). Built-in datasets declare theirs in their builder module (``DATASET`` or ``DATASETS``);
a dataset package adds its own through the ``dialeval.datasets`` entry-point group (``name = "pkg.module"``,
a module with ``DATASET``/``DATASETS``) or ``DIALEVAL_DATASET_PACKAGES=pkg.module``; a user's file is
declared on the fly (:mod:`dialeval.meta.own_data`).

A metric fits a dataset config when the config's level is among the metric's ``meta_levels``, the protocol
among its ``meta_protocols`` (all when empty) and every field of its ``meta_requires`` among the fields the
dataset fills on every row (:func:`fits`).
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

from dialeval.registry import META_LEVELS, MetricDeclaration, resolve

#: What one scored row is, per protocol.
PROTOCOLS = {
    "sets": "a set of responses (per-set labels and human scores)",
    "pairs": "a context and one response, positive or negative (ROC AUC of positives against negatives)",
    "rated": "a rated response or dialogue (human quality scores, per-quality correlations)",
}
ENTRY_POINT_GROUP = "dialeval.datasets"
PACKAGES_ENV = "DIALEVAL_DATASET_PACKAGES"


@dataclass(frozen=True)
class DatasetDeclaration:
    """Everything the meta-evaluation needs to know about a dataset, written once in its builder.

    ``levels`` maps each config to ``set``/``turn``/``dialog``; ``leaderboard_configs`` (default: every config)
    are those the leaderboard scores and ``default_configs`` (default: the same) those ``meta-eval`` scores;
    ``overall`` maps each config of a ``rated`` dataset to the quality its summary row uses; ``system_field``
    names each row's system (system-level rows); ``columns`` are stored metric columns the leaderboard scores as
    ``column:NAME`` rows; ``fields`` are optional row fields every row fills (a metric's ``meta_requires``).
    Protocol details: ``set_targets`` (``sets``: config → ``(field, statistic)`` pairs; a field missing on every
    row is left out), ``pairs`` (``pairs``: ``(row field of responses, label)``) and ``pair_targets``
    (``(target, positive label, negative label)``), ``overall_only`` (``meta-eval`` correlates only the overall
    quality by Spearman unless every quality is asked for), ``keep_rows`` (``rated`` rows scored as stored;
    otherwise empty context turns and empty responses are left out, and counted), ``chunk_rows`` (the cache
    stores scores per this many rows, so a killed run resumes), ``round_decimals`` (computed scores rounded as the
    paper's pipeline stored them), ``speaker_option`` (the signature records whether speaker tags were kept),
    ``rubrics`` (quality → the LLM judge's rubric text), ``left_out_systems`` (system → why the paper's
    protocol leaves its rows out; they are counted in the report) and ``published`` ((config, target, statistic) → the
    published numbers to compare with). ``builder`` is the :mod:`dialeval.datasets` name that builds it (default
    ``name``), ``folder`` its folder under ``--data-dir``; a plugin gives ``loader`` instead,
    ``"pkg.module:function"`` called as ``function(config, data_dir)`` and returning the rows.
    """

    name: str
    protocol: str
    levels: Mapping[str, str]
    description: str = ""
    builder: str | None = None
    loader: str | None = None
    folder: str = ""
    leaderboard_configs: tuple[str, ...] = ()
    default_configs: tuple[str, ...] = ()
    overall: Mapping[str, str] = field(default_factory=dict)
    system_field: str | None = None
    columns: tuple[str, ...] = ()
    fields: tuple[str, ...] = ()
    set_targets: Mapping[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)
    pairs: tuple[tuple[str, float], ...] = ()
    pair_targets: tuple[tuple[str, float, float], ...] = ()
    overall_only: bool = False
    keep_rows: bool = False
    chunk_rows: int | None = None
    round_decimals: int | None = None
    speaker_option: bool = False
    rubrics: Mapping[str, str] = field(default_factory=dict)
    left_out_systems: Mapping[str, str] = field(default_factory=dict)
    published: Mapping[tuple[str, str, str], tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        where = f"dataset {self.name!r}"
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"dataset name {self.name!r} must be a non-empty string.")
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"{where}: protocol must be one of {sorted(PROTOCOLS)}, got {self.protocol!r}.")
        if not self.levels:
            raise ValueError(f"{where}: declare levels={{config: level}} (levels: {META_LEVELS}).")
        bad = {c: lv for c, lv in self.levels.items() if lv not in META_LEVELS}
        if bad:
            raise ValueError(f"{where}: levels {bad} are not among {META_LEVELS}.")
        unknown = [c for c in (*self.leaderboard_configs, *self.default_configs) if c not in self.levels]
        if unknown:
            raise ValueError(f"{where}: configs {unknown} are not among its levels {sorted(self.levels)}.")
        if self.protocol == "rated":
            missing = [c for c in self.levels if c not in self.overall]
            if missing:
                raise ValueError(f"{where}: a rated dataset declares the overall quality of every config; "
                                 f"missing for {missing}.")
        if self.protocol == "pairs" and not (self.pairs and self.pair_targets):
            raise ValueError(f"{where}: a pairs dataset declares pairs=((field, label), …) and pair_targets.")
        for name in ("columns", "fields", "leaderboard_configs", "default_configs"):
            if isinstance(getattr(self, name), str):
                raise TypeError(f"{where}: {name} must be a tuple of names, not a string.")

    @property
    def configs(self) -> tuple[str, ...]:
        """The configs the leaderboard scores."""
        return tuple(self.leaderboard_configs or self.levels)

    @property
    def meta_eval_configs(self) -> tuple[str, ...]:
        """The configs ``meta-eval`` scores by default."""
        return tuple(self.default_configs or self.configs)

    def level(self, config: str) -> str:
        """The level of ``config`` (any name, when every config of the dataset has the same level)."""
        if config not in self.levels and len(set(self.levels.values())) == 1:
            return next(iter(self.levels.values()))
        if config not in self.levels:
            raise ValueError(f"unknown config {config!r} for {self.name!r}; choose one of {sorted(self.levels)}.")
        return self.levels[config]

    def overall_target(self, config: str) -> str | None:
        """The target the summary row uses (``annotation_means.<quality>``), ``None`` for other protocols."""
        quality = self.overall.get(config)
        return f"annotation_means.{quality}" if quality else None


def fits(metric: MetricDeclaration, dataset: DatasetDeclaration, config: str) -> str | None:
    """Why ``metric`` cannot score ``dataset``/``config`` (``None`` when it fits): the config's level must be
    among ``meta_levels``, the protocol among ``meta_protocols`` (any when empty), and every ``meta_requires``
    field among the fields the dataset fills on every row."""
    level = dataset.level(config)
    if level not in metric.meta_levels:
        return f"it scores levels {list(metric.meta_levels)}, and {dataset.name}/{config} is {level}-level"
    if metric.meta_protocols and dataset.protocol not in metric.meta_protocols:
        return f"it scores {list(metric.meta_protocols)} data, and {dataset.name} is {dataset.protocol}"
    missing = [f for f in metric.meta_requires if f not in dataset.fields]
    if missing:
        return f"it needs row field(s) {missing}, which {dataset.name} does not fill on every row"
    return None


# -- discovery ---------------------------------------------------------------------------------------
_LOCK = threading.Lock()
_CACHE: dict[str, DatasetDeclaration] | None = None
_CACHE_KEY: tuple[Any, ...] | None = None


def _declarations_in(module_name: str) -> list[DatasetDeclaration]:
    module = importlib.import_module(module_name)
    found = [getattr(module, "DATASET", None), *getattr(module, "DATASETS", ())]
    return [d for d in found if isinstance(d, DatasetDeclaration)]


def _plugin_modules() -> list[str]:
    names = [ep.value for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)]
    return names + [n.strip() for n in os.environ.get(PACKAGES_ENV, "").split(",") if n.strip()]


def declarations() -> dict[str, DatasetDeclaration]:
    """Every known dataset, ``{name: declaration}``: the built-in builders' first, then plugins'."""
    global _CACHE, _CACHE_KEY
    key = (os.environ.get(PACKAGES_ENV, ""),)
    with _LOCK:
        if _CACHE is not None and _CACHE_KEY == key:
            return _CACHE
        from dialeval.datasets import BUILTIN_DATASETS

        found: dict[str, DatasetDeclaration] = {d.name: d for d in BUILTIN_DATASETS}
        for module_name in _plugin_modules():
            try:
                plugged = _declarations_in(module_name)
            except ImportError as exc:
                raise ValueError(f"{PACKAGES_ENV} or the {ENTRY_POINT_GROUP} entry points: the dataset package "
                                 f"{module_name!r} does not import ({type(exc).__name__}: {exc}); fix its name or "
                                 "install it.") from None
            for decl in plugged:
                if decl.name in found and found[decl.name] != decl:
                    raise ValueError(f"dataset {decl.name!r} is declared twice (built-in or {module_name}); rename one.")
                found[decl.name] = decl
        _CACHE, _CACHE_KEY = found, key
        return found


def get(name: Any) -> DatasetDeclaration:
    """The declaration of dataset ``name``; a one-line ``ValueError`` listing the known ones otherwise."""
    if isinstance(name, DatasetDeclaration):
        return name
    decls = declarations()
    if not isinstance(name, str) or name not in decls:
        raise ValueError(f"no meta-evaluation protocol for {name!r}; use one of {sorted(decls)} or --data FILE.")
    return decls[name]


def loader_function(decl: DatasetDeclaration) -> Callable[..., list[dict[str, Any]]] | None:
    """A plugin dataset's loader (``function(config, data_dir) -> rows``), or ``None`` for a built-in builder."""
    return resolve(decl.loader) if decl.loader else None
