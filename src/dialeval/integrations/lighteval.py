"""dialeval's metrics as LightEval metrics (``pip install "dialeval[lighteval]"``).

``metric("<corpus metric>")`` is a ``CorpusLevelMetric``: each doc's generation is kept, and the metric is computed
once over the task's docs; its numbers are reported as ``<metric>/<key>``, ... . ``metric("<per-item metric>_<config>",
model=...)`` is a batched ``SampleLevelMetric``: all docs are scored in one call and each doc gets its score; the
task's number is their mean (the metric's headline). Options are the metric's own ``compute`` options. A doc
carries what the metric reads beyond the generation in ``Doc.specific``: ``contexts`` (the dialogue so far, a
list of turns), ``references``/``candidates`` (DialStory). Response-set metrics read each doc's ``samples``
generations (``metric("<set metric>", samples=5)``; default 2) as its set. :func:`metrics` adapts every declared metric (see :mod:`dialeval.integrations`).

Offline, build the ``Pipeline`` inside :func:`custom_tasks_only`: LightEval 0.13 imports all its built-in tasks
when a Pipeline starts, and one of them (``tiny_benchmarks``) downloads a file from GitHub on import.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from dialeval import integrations, registry
from dialeval.extras import needs_extras
from dialeval.integrations import Adapted

with needs_extras("dialeval.integrations.lighteval"):  # absent: one line naming the lighteval extra
    from lighteval.metrics.metrics_sample import SampleLevelComputation, SamplingMetric
    from lighteval.metrics.sample_preparator import Preparator
    from lighteval.metrics.utils.metric_utils import CorpusLevelMetric, Metric, SampleLevelMetric
    from lighteval.models.model_output import ModelResponse
    from lighteval.tasks.registry import Registry
    from lighteval.tasks.requests import Doc, SamplingMethod

__all__ = ["metric", "metrics", "dialogue_doc", "custom_tasks_only"]


def _record(target: Adapted, doc: Doc, response: ModelResponse) -> dict[str, Any]:
    return integrations.item_record(target, response.final_text, doc.specific)


class ItemScores(SampleLevelComputation):
    """A per-item metric over a batch of docs: one score per doc."""

    def __init__(self, target: Adapted, options: Mapping[str, Any]) -> None:
        self.target, self.options = target, dict(options)

    def compute(self, responses: list[ModelResponse], docs: list[Doc], **kwargs: Any) -> list[float]:
        """One score per doc; a doc whose generation is empty gets NaN (left out of the task's mean)."""
        return integrations.score_items(self.target, [r.final_text for r in responses], [d.specific for d in docs],
                                        self.options)


class ItemInputs(Preparator):
    """Keeps a doc's ``compute`` inputs for a corpus-level metric."""

    def __init__(self, target: Adapted) -> None:
        self.target = target

    def prepare(self, doc: Doc, model_response: ModelResponse, **kwargs: Any) -> dict[str, Any]:
        return _record(self.target, doc, model_response)


class SetInputs(SamplingMetric, ItemInputs):
    """Keeps a doc's response set (``samples`` generations; LightEval generates the most any metric asks for)."""

    def __init__(self, target: Adapted, samples: int) -> None:
        ItemInputs.__init__(self, target)
        self.samples = samples

    def num_samples(self) -> int:
        return self.samples

    def prepare(self, doc: Doc, model_response: ModelResponse, **kwargs: Any) -> dict[str, Any]:
        record = _record(self.target, doc, model_response)
        record["predictions"] = record["predictions"][: self.samples]
        return record


class CorpusNumbers:
    """A corpus-level metric over the task's docs: ``{"<adapter>/<result key>": value}``."""

    def __init__(self, target: Adapted, options: Mapping[str, Any]) -> None:
        self.target, self.options = target, dict(options)

    def __call__(self, records: list[dict[str, Any]]) -> dict[str, float]:
        result = integrations.compute(self.target, list(records), self.options)
        return {f"{self.target.name}/{k}": v for k, v in integrations.result_numbers(self.target, result).items()}


def metric(name: str, *, samples: int | None = None, **options: Any) -> Metric:
    """The LightEval metric of adapter ``name`` (a metric name, or ``<metric>_<config>``) with its ``options``;
    ``samples``: generations per doc, the response set of a response-set metric (default 2)."""
    target = integrations.get(name, options)
    sets = target.kind == "response_sets"
    if samples is not None and not sets:
        raise ValueError(f"{name}: `samples` sets the size of a response set; {name} reads "
                         f"{registry.INPUT_KINDS[target.kind]}. Leave it out.")
    if sets and (isinstance(samples, bool) or not isinstance(samples, int | None) or (samples or 2) < 2):
        raise ValueError(f"{name}: `samples`={samples!r} must be an integer ≥ 2 (generations per doc).")
    # dialeval's declarations state no direction; LightEval only records this flag (see each metric's card).
    if target.per_item:
        return SampleLevelMetric(metric_name=target.name, higher_is_better=True, category=SamplingMethod.GENERATIVE,
                                 sample_level_fn=ItemScores(target, options), corpus_level_fn=integrations.mean,
                                 batched_compute=True)
    return CorpusLevelMetric(metric_name=target.name, higher_is_better=True, category=SamplingMethod.GENERATIVE,
                             sample_level_fn=SetInputs(target, samples or 2) if sets else ItemInputs(target),
                             corpus_level_fn=CorpusNumbers(target, options))


def metrics(options: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Metric]:
    """Every declared metric as a LightEval metric, ``{adapter name: Metric}``; ``options`` per adapter name."""
    options = dict(options or {})
    unknown = sorted(set(options) - set(integrations.adapted()))
    if unknown:
        raise ValueError(f"options for unknown dialeval metrics {unknown}; known: {', '.join(integrations.adapted())}.")
    return {name: metric(name, **options.get(name, {})) for name in integrations.adapted()}


def dialogue_doc(contexts: list[str], task_name: str, *, separator: str = "\n", cue: str = "",
                 **fields: Any) -> Doc:
    """A generative Doc whose prompt is the dialogue so far (``contexts``, each turn followed by ``separator``)
    then ``cue`` (e.g. ``"System:"``), and whose ``specific`` holds ``contexts`` and any other ``fields`` the
    metrics read (``references``, ``candidates``)."""
    if isinstance(contexts, str) or not all(isinstance(t, str) for t in contexts):
        raise TypeError(f"`contexts` must be a list of turn strings, got {contexts!r:.60}.")
    return Doc(query="".join(t + separator for t in contexts) + cue, choices=[""], gold_index=0, task_name=task_name,
               specific={"contexts": list(contexts), **fields})


@contextmanager
def custom_tasks_only() -> Iterator[None]:
    """Within this block a LightEval ``Pipeline`` loads only its custom tasks (``custom_tasks_directory``), not
    LightEval's built-in ones: their import downloads ``tinyBenchmarks.pkl`` from GitHub, which fails offline
    (huggingface/open-r1#651), and takes seconds."""
    original = Registry.__dict__["load_all_task_configs"]

    def custom_only(custom_tasks: Any = None, load_multilingual: bool = False) -> dict[str, Any]:
        if custom_tasks is None:
            return {}
        return Registry._extract_configs(Registry.create_custom_tasks_module(custom_tasks))

    Registry.load_all_task_configs = staticmethod(custom_only)  # type: ignore[method-assign]
    try:
        yield
    finally:
        Registry.load_all_task_configs = original  # type: ignore[method-assign]
