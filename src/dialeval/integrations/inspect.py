"""dialeval's metrics as Inspect AI scorers (``pip install "dialeval[inspect]"``).

``scorer("<per-item metric>_<config>", model=...)`` scores each sample on its own (the sample's completion after its
``metadata["contexts"]``); the task metric is the mean, the metric's headline. ``scorer("<corpus metric>")`` and the
other corpus-level metrics keep each sample's completion (its value is the completion; the inputs are in the
score's metadata) and compute the metric once over all samples, reported as ``<metric>/<key>``, ... .
Response-set metrics read a sample's choices (``GenerateConfig(num_choices=...)``) as its set. :func:`scorers`
gives one scorer factory per declared metric (see :mod:`dialeval.integrations`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, metric
from inspect_ai.scorer import scorer as inspect_scorer
from inspect_ai.solver import TaskState

from dialeval import integrations
from dialeval.integrations import Adapted

__all__ = ["scorer", "scorers"]
RECORD = "dialeval_inputs"  #: the score metadata key holding a sample's ``compute`` inputs


def _record(target: Adapted, state: TaskState) -> dict[str, Any]:
    generations = [c.message.text for c in state.output.choices] or [state.output.completion]
    return integrations.item_record(target, generations, state.metadata)


def _item_mean(target: Adapted) -> Metric:
    @metric(name=target.name)
    def item_mean() -> Metric:
        def compute(scores: list[SampleScore]) -> float:
            return integrations.mean([float(s.score.as_float()) for s in scores])

        return compute

    return item_mean()


def _corpus(target: Adapted, options: Mapping[str, Any]) -> Metric:
    @metric(name=target.name)
    def corpus() -> Metric:
        def compute(scores: list[SampleScore]) -> dict[str, float]:
            ordered = sorted(scores, key=lambda s: (str(type(s.sample_id)), s.sample_id))
            records = [(s.score.metadata or {})[RECORD] for s in ordered]
            result = integrations.compute(target, records, options)
            return {f"{target.name}/{k}": v for k, v in integrations.result_numbers(target, result).items()}

        return compute

    return corpus()


def scorer(name: str, **options: Any) -> Scorer:
    """The Inspect scorer of adapter ``name`` (a metric name, or ``<metric>_<config>``) with its ``options``."""
    target = integrations.get(name, options)
    metrics = [_item_mean(target)] if target.per_item else [_corpus(target, options)]

    @inspect_scorer(metrics=metrics, name=target.name)
    def dialeval_scorer() -> Scorer:
        async def score(state: TaskState, answer: Target) -> Score:
            record = _record(target, state)
            if not target.per_item:
                return Score(value=state.output.completion, answer=state.output.completion,
                             metadata={RECORD: record})
            result = integrations.compute(target, [record], options)
            value = integrations.item_scores(target, result, 1)[0]
            return Score(value=value, answer=state.output.completion, metadata={RECORD: record})

        return score

    return dialeval_scorer()


def scorers() -> dict[str, Callable[..., Scorer]]:
    """One scorer factory per declared metric, ``{adapter name: factory(**options) -> Scorer}``."""
    def factory(name: str) -> Callable[..., Scorer]:
        def make(**options: Any) -> Scorer:
            return scorer(name, **options)

        make.__name__ = make.__qualname__ = name
        make.__doc__ = f"The Inspect scorer of dialeval's {name} (options: its compute options)."
        return make

    return {name: factory(name) for name in integrations.adapted()}
