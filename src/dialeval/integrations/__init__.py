"""What the LightEval and Inspect adapters share: one adapter per declared metric (and config), its level, the
``compute`` inputs of one generated item, and the computation (the same path as ``dialeval score``).

Built from :func:`dialeval.registry.declarations`, so a new or plugin metric is adapted without a change here.
A metric whose item is a dialogue, or a context with its response (:data:`ITEM_KINDS`), is per item: each item
gets its own score (the result's ``scores``) and the task's number is their mean, the metric's headline.
Every other metric (Dist-n, Ent-n, LF, Sem-Ent, the response-set metrics such as Vendi, DialSpk, DialGen) is
corpus level: it is computed once over all the items, and every number of its result is reported.

An item's fields: the model's generations (one, or several for response-set metrics: one set per item), and
for metrics that read more, the item's own ``contexts`` (the dialogue so far, a list of turns),
``references`` and ``candidates`` (DialStory); a ``dialogues`` metric scores ``contexts + [generation]``.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dialeval import registry
from dialeval.distributed.columns import ROLES, TEXT, input_kind

#: Input kinds whose items are scored one by one (sample level); all others are corpus level.
ITEM_KINDS = ("dialogues", "turns")


@dataclass(frozen=True)
class Adapted:
    """One metric (in one config) as an adapter: its adapter name, declaration, config and input kind."""

    name: str
    decl: registry.MetricDeclaration
    config: str | None
    kind: str

    @property
    def per_item(self) -> bool:
        """Whether each item gets its own score (sample level) rather than one corpus result."""
        return self.kind in ITEM_KINDS


def adapted() -> dict[str, Adapted]:
    """Every declared metric as ``{adapter name: Adapted}``: the metric's name, or ``<name>_<config>`` for each
    config of a metric with several (``<name>_turn``, ``<name>_dialog``)."""
    out: dict[str, Adapted] = {}
    for decl in registry.declarations().values():
        configs: Sequence[str | None] = [None] if decl.configs == ("default",) else decl.configs
        for config in configs:
            name = decl.name if config is None else f"{decl.name}_{config}"
            out[name] = Adapted(name, decl, config, input_kind(decl, config))
    return out


def get(name: Any, options: Mapping[str, Any] | None = None) -> Adapted:
    """The adapter ``name`` with ``options`` checked against its declaration (one-line errors)."""
    known = adapted()
    if not isinstance(name, str) or name not in known:
        raise ValueError(f"unknown dialeval metric {name!r}; choose one of: {', '.join(known)}.")
    decl = known[name].decl
    registry.check_options(decl, dict(options or {}))
    for key, value in (options or {}).items():
        if value is not None and decl.option(key).per_item:
            raise ValueError(f"{name}: `{key}`={value!r:.40} holds one entry per item of a call ({decl.option(key).help}), "
                             "which a metric made before generation cannot align with its items; leave it out.")
    return known[name]


def item_record(target: Adapted, generations: Sequence[str], fields: Mapping[str, Any] | None) -> dict[str, Any]:
    """One item's ``compute`` inputs (input name → value) from the model's ``generations`` and the item's
    ``fields`` (``contexts``, ``references``, ``candidates``)."""
    fields = fields or {}
    if isinstance(generations, str) or not generations:
        raise ValueError(f"{target.name}: an item needs at least one generation (a list of strings), got "
                         f"{generations!r:.60}.")
    record: dict[str, Any] = {}
    for role in ROLES[target.kind]:
        if role.name == "predictions":
            record["predictions"] = _predictions(target.kind, role.kind, list(generations))
        elif role.name == "dialogues":
            record["dialogues"] = [*_field(target, fields, "contexts"), generations[0]]
        elif role.name in fields or role.required:
            record[role.name] = _field(target, fields, role.name)
    return record


def _predictions(kind: str, role_kind: str, generations: list[str]) -> Any:
    """A response (the first generation), a response set (all of them) or a list of lines (DialStory)."""
    if kind == "response_sets":
        return generations
    if role_kind == TEXT:
        return generations[0]
    return [line.strip() for line in generations[0].splitlines() if line.strip()]


def _field(target: Adapted, fields: Mapping[str, Any], name: str) -> Any:
    if name not in fields:
        raise ValueError(f"{target.name} reads {registry.INPUT_KINDS[target.kind]}: each item needs the field "
                         f"{name!r} (LightEval: Doc.specific[{name!r}]; Inspect: Sample.metadata[{name!r}]).")
    return fields[name]


def compute(target: Adapted, records: list[dict[str, Any]], options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The metric's result over ``records``: the inputs are read as ``dialeval score`` reads a file's records, and
    computed by the same function (the metric's core, or its ``evaluate`` module)."""
    from dialeval.cli.score import compute_locally, local_inputs

    inputs = local_inputs(records, target.decl, target.kind, {}, source=target.name)
    return compute_locally(target.decl, target.config, inputs, dict(options or {}))


def empty_generation(generations: Sequence[Any]) -> bool:
    """Whether an item's (first) generation is empty or blank: a per-item metric rates text, so such an item is
    marked (score NaN, see :func:`score_items`) rather than failing every other item of its batch."""
    return not generations or not isinstance(generations[0], str) or not generations[0].strip()


def score_items(target: Adapted, generations: Sequence[Sequence[Any]], fields: Sequence[Mapping[str, Any] | None],
                options: Mapping[str, Any] | None = None) -> list[float]:
    """A per-item metric's score of each item (its ``generations`` and ``fields``), computed in one call; an item
    whose generation is empty gets NaN (not scored), and :func:`mean` leaves it out."""
    if len(generations) != len(fields):
        raise ValueError(f"{target.name}: {len(generations)} model responses for {len(fields)} items; each item "
                         "needs its own response.")
    keep = [i for i, g in enumerate(generations) if not empty_generation(g)]
    scores = [math.nan] * len(generations)
    if keep:
        result = compute(target, [item_record(target, generations[i], fields[i]) for i in keep], options)
        for i, value in zip(keep, item_scores(target, result, len(keep))):
            scores[i] = value
    return scores


def item_scores(target: Adapted, result: Mapping[str, Any], count: int) -> list[float]:
    """The per-item scores of a per-item metric's result (its ``scores``, one per item)."""
    scores = result.get("scores")
    if not isinstance(scores, list) or len(scores) != count:
        raise ValueError(f"{target.name}: a per-item metric must return `scores` with one value per item ({count}); "
                         f"got {type(scores).__name__}.")
    return [float(s) for s in scores]


def result_numbers(target: Adapted, result: Mapping[str, Any]) -> dict[str, float]:
    """The scalar numbers of a result (lists, texts, the signature and declared settings left out)."""
    return {key: float(value) for key, value in result.items()
            if isinstance(value, numbers.Real) and not isinstance(value, bool) and key not in target.decl.settings}


def mean(values: Sequence[float]) -> float:
    """A per-item metric's task number: the mean of its item scores, as the metrics compute their headline; items
    not scored (NaN: an empty generation) are left out, and with none scored the mean is NaN."""
    import numpy as np

    scored = np.asarray(values, dtype=float)
    scored = scored[~np.isnan(scored)]
    return float(np.mean(scored)) if scored.size else math.nan
