"""dialeval's metrics as Inspect AI scorers (``pip install "dialeval[inspect]"``).

``scorer("<per-item metric>_<config>", model=...)`` scores each sample on its own (the sample's completion after its
``metadata["contexts"]``); the task metric is the mean, the metric's headline (a sample whose completion is empty
scores NaN, "not scored", and is left out of it). ``scorer("<corpus metric>")`` and the
other corpus-level metrics keep each sample's completion (its value is the completion; the inputs are in the
score's metadata) and compute the metric once over all samples and all their epochs, reported as
``<metric>/<key>``, ... .
Response-set metrics read a sample's choices (``GenerateConfig(num_choices=...)``) as its set. :func:`scorers`
gives one scorer factory per declared metric (see :mod:`dialeval.integrations`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from dialeval import integrations
from dialeval.extras import needs_extras
from dialeval.integrations import Adapted

with needs_extras("dialeval.integrations.inspect"):  # absent: one line naming the inspect extra
    from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, metric
    from inspect_ai.scorer import scorer as inspect_scorer
    from inspect_ai.solver import TaskState

__all__ = ["scorer", "scorers"]
RECORD = "dialeval_inputs"  #: the score metadata key holding a sample's ``compute`` inputs
RUN = "dialeval_run"  #: the score metadata key holding the id of the eval run that scored it


def _generations(state: TaskState) -> list[str]:
    return [c.message.text for c in state.output.choices] or [state.output.completion]


def _record(target: Adapted, state: TaskState) -> dict[str, Any]:
    return integrations.item_record(target, _generations(state), state.metadata)


def _run_id() -> str | None:
    """The id of the Inspect eval whose sample is being scored, or ``None`` outside one. Inspect keeps it on the
    active sample (``inspect_ai.log._samples``, not a public module: where it moves, every run shares ``None``)."""
    try:
        from inspect_ai.log._samples import sample_active
    except ImportError:
        return None
    active = sample_active()
    return getattr(active, "eval_id", None) if active is not None else None


class EpochRecords:
    """Every epoch's inputs of every sample, as the scorer saw them, per eval run. Inspect reduces a sample's
    epochs to one score (keeping the first epoch's metadata) before a metric runs, so a corpus metric reads the
    epochs here: it is computed over all generations of all epochs of its own run, not over epoch 1's alone, and
    not over a previous run's epochs when the same Task (the same scorer object) is evaluated again."""

    KEEP_RUNS = 4  #: the runs kept (the oldest dropped): a metric runs at the end of its own run

    def __init__(self) -> None:
        self.runs: dict[str | None, dict[tuple[str, Any], dict[int, dict[str, Any]]]] = {}

    def add(self, state: TaskState, record: dict[str, Any], run: str | None = None) -> None:
        records = self.runs.pop(run, {})
        self.runs[run] = records  # the most recently used run last
        while len(self.runs) > self.KEEP_RUNS:
            del self.runs[next(iter(self.runs))]
        key = (str(type(state.sample_id)), state.sample_id)
        records.setdefault(key, {})[int(getattr(state, "epoch", 1) or 1)] = record

    def of(self, score: SampleScore) -> list[dict[str, Any]]:
        """The sample's records in the run that scored it, epoch by epoch (its score's own when the scorer did not
        see it)."""
        metadata = score.score.metadata or {}
        epochs = self.runs.get(metadata.get(RUN), {}).get((str(type(score.sample_id)), score.sample_id))
        if not epochs:
            return [metadata[RECORD]]
        return [epochs[e] for e in sorted(epochs)]


def _item_mean(target: Adapted) -> Metric:
    @metric(name=target.name)
    def item_mean() -> Metric:
        def compute(scores: list[SampleScore]) -> float:
            return integrations.mean([float(s.score.as_float()) for s in scores])

        return compute

    return item_mean()


def _corpus(target: Adapted, options: Mapping[str, Any], epochs: EpochRecords) -> Metric:
    @metric(name=target.name)
    def corpus() -> Metric:
        def compute(scores: list[SampleScore]) -> dict[str, float]:
            ordered = sorted(scores, key=lambda s: (str(type(s.sample_id)), s.sample_id))
            records = [record for s in ordered for record in epochs.of(s)]
            result = integrations.compute(target, records, options)
            return {f"{target.name}/{k}": v for k, v in integrations.result_numbers(target, result).items()}

        return compute

    return corpus()


def scorer(name: str, **options: Any) -> Scorer:
    """The Inspect scorer of adapter ``name`` (a metric name, or ``<metric>_<config>``) with its ``options``."""
    target = integrations.get(name, options)
    epochs = EpochRecords()
    metrics = [_item_mean(target)] if target.per_item else [_corpus(target, options, epochs)]

    @inspect_scorer(metrics=metrics, name=target.name)
    def dialeval_scorer() -> Scorer:
        async def score(state: TaskState, answer: Target) -> Score:
            if target.per_item:  # each epoch is scored; Inspect reduces a sample's epochs (mean by default)
                (value,) = integrations.score_items(target, [_generations(state)], [state.metadata], options)
                if value != value:  # NaN: an empty generation, marked and left out of the mean
                    return Score(value=value, answer=state.output.completion,
                                 explanation="empty generation: not scored")
                return Score(value=value, answer=state.output.completion, metadata={RECORD: _record(target, state)})
            record, run = _record(target, state), _run_id()
            epochs.add(state, record, run)
            return Score(value=state.output.completion, answer=state.output.completion,
                         metadata={RECORD: record, RUN: run})

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
