"""Diversity Threshold Generation (Stasaski & Hearst, NAACL 2022, §6).

Sample n responses (nucleus sampling, p = 0.9). While the set's diversity has not reached the threshold
and fewer than ``max_samples`` responses have been sampled, drop the response whose removal leaves the
best-scoring subset and sample a replacement into its slot. The paper's setting (§5, §6.1–6.2): n = 5,
NLI with ``roberta-large-mnli``, a target of 10 contradictions among the 20 ordered pairs, S = 20 samples
at most, results averaged over 10 trials, BlenderBot given the last 128 context tokens.

Readings (the paper is not uniform; the card quotes it):

- Threshold: the introduction and Table 4 speak of a target of "10 Contradictions" ("a minimum target
  level"), §6.2 of "greater than 10". Default: reached means ``score >= 10``
  (``inclusive=True``); ``inclusive=False`` is the strict "> 10" reading.
- Sample cap: S counts every sampled response, the first n included (Table 4's "Num. Sampled" lies
  between 5.2 and 20.0, so the initial 5 are counted): at most S − n = 15 replacements.
- Trials: :func:`threshold_generation_trials` runs ``trials`` seeded runs and averages them
  (:func:`summarize_trials`); every run stays available.
- Thresholds for other scorers: the paper takes the 90th percentile of the scorer over DailyDialog++'s
  human 5-response sets (:func:`calibrate_threshold`).

The loop (:func:`threshold_resample`) is pure: it takes a sampler and a scorer, so it is tested
exactly with scripted ones. :func:`diversity_threshold_generation` wires it to any transformers causal
or encoder-decoder LM. Scorers are plain callables ``list[str] -> float`` (higher = more diverse):
:func:`nli_scorer` (default), :func:`distinct_scorer`, :func:`embedding_scorer`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from dialeval.io.validation import check_positive_ints
from dialeval.nli.core import NLISetScorer, get_classifier

Scorer = Callable[[list[str]], float]
Sampler = Callable[[int], list[str]]


@dataclass
class ThresholdGenerationResult:
    """Outcome of Diversity Threshold Generation.

    ``responses``: the final set; ``scores``: the set's score initially and after each replacement;
    ``num_samples``: responses sampled in total (n + replacements); ``reached_threshold``: whether the
    final score reached ``threshold`` (``>=`` when ``inclusive``, else ``>``); ``replacements``: per step,
    the slot replaced, the dropped and the new response.
    """

    responses: list[str]
    scores: list[float]
    num_samples: int
    reached_threshold: bool
    threshold: float
    replacements: list[dict[str, Any]] = field(default_factory=list)
    inclusive: bool = True

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def initial_responses(self) -> list[str]:
        """The first n sampled responses (the final set with every replacement undone)."""
        out = list(self.responses)
        for step in reversed(self.replacements):
            out[step["slot"]] = step["dropped"]
        return out


#: The paper's target: 10 contradictions among the 20 ordered pairs of 5 responses.
PAPER_CONTRADICTIONS = 10


def default_contradiction_threshold(n: int) -> int:
    """Half of the n(n−1) ordered pairs, ⌊n(n−1)/2⌋: the paper's 10 of 20 for n = 5."""
    return n * (n - 1) // 2


def reached(score: float, threshold: float, inclusive: bool = True) -> bool:
    """Whether ``score`` reaches ``threshold``: ``score >= threshold`` (inclusive) or ``score > threshold``."""
    return score >= threshold if inclusive else score > threshold


def best_removal(responses: Sequence[str], scorer: Scorer) -> tuple[int, list[float]]:
    """Index whose removal leaves the best-scoring subset (first one on ties), and every subset's score."""
    subsets = [list(responses[:i]) + list(responses[i + 1:]) for i in range(len(responses))]
    prefetch = getattr(scorer, "prefetch", None)
    if callable(prefetch):
        prefetch(subsets)
    scores = [float(scorer(s)) for s in subsets]
    return int(np.argmax(scores)), scores


def threshold_resample(
    sample: Sampler,
    scorer: Scorer,
    *,
    n: int = 5,
    threshold: float,
    max_samples: int = 20,
    inclusive: bool = True,
) -> ThresholdGenerationResult:
    """The Diversity Threshold Generation loop over a ``sample(k) -> k responses`` function.

    Stops as soon as the set's score reaches ``threshold`` (:func:`reached`) or ``max_samples`` responses
    (the first n included) have been sampled.
    """
    _check_int(n, "n", 2)
    _check_int(max_samples, "max_samples", n)
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or math.isnan(threshold):
        raise TypeError(f"`threshold` must be a number, got {threshold!r}.")
    responses = _check_samples(sample(n), n)
    num_samples = n
    score = float(scorer(list(responses)))
    scores = [score]
    replacements: list[dict[str, Any]] = []
    while not reached(score, threshold, inclusive) and num_samples < max_samples:
        drop, _ = best_removal(responses, scorer)
        new = _check_samples(sample(1), 1)[0]
        num_samples += 1
        replacements.append({"slot": drop, "dropped": responses[drop], "new": new})
        responses[drop] = new
        score = float(scorer(list(responses)))
        scores.append(score)
    return ThresholdGenerationResult(responses, scores, num_samples, reached(score, threshold, inclusive),
                                     float(threshold), replacements, bool(inclusive))


def summarize_trials(results: Sequence[ThresholdGenerationResult], report: Scorer | None = None) -> dict[str, float]:
    """Means over trials (the paper averages 10): starting and ending score, responses sampled, and the
    share of trials that reached the threshold; with ``report`` (e.g. Baseline NLI Diversity, what the
    paper's Table 4 reports while thresholding on contradictions), also its mean on the starting and the
    ending sets."""
    if not results:
        raise ValueError("no trials to summarize.")
    k = len(results)
    out = {
        "starting_score": math.fsum(r.scores[0] for r in results) / k,
        "ending_score": math.fsum(r.scores[-1] for r in results) / k,
        "num_samples": math.fsum(r.num_samples for r in results) / k,
        "reached_share": sum(r.reached_threshold for r in results) / k,
        "trials": k,
    }
    if report is not None:
        out["starting_report"] = math.fsum(float(report(r.initial_responses())) for r in results) / k
        out["ending_report"] = math.fsum(float(report(list(r.responses))) for r in results) / k
    return out


def calibrate_threshold(scorer: Scorer, reference_sets: Sequence[Sequence[str]], percentile: float = 90.0) -> float:
    """The ``percentile``-th percentile (linear interpolation, ``numpy.percentile``'s default) of
    ``scorer`` over reference response sets: the paper's threshold for scorers without a natural one
    (90th percentile over DailyDialog++'s human 5-response sets: 0.98 for distinct-n, −0.179 for Sent-BERT)."""
    if not 0.0 <= float(percentile) <= 100.0:
        raise ValueError(f"`percentile` must be in [0, 100], got {percentile!r}.")
    if not reference_sets:
        raise ValueError("`reference_sets` is empty; pass the human response sets to calibrate on.")
    values = [float(scorer(list(s))) for s in reference_sets]
    return float(np.percentile(np.asarray(values, dtype=np.float64), float(percentile)))


def _check_int(value: Any, name: str, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"`{name}` must be an int ≥ {minimum}, got {value!r}.")


def _check_samples(values: Any, k: int) -> list[str]:
    out = list(values)
    if len(out) != k or not all(isinstance(v, str) for v in out):
        raise RuntimeError(f"the sampler returned {out!r:.80} for {k} response(s); expected {k} strings.")
    return out


# ---------------------------------------------------------------------------------------------------
# Scorers


def nli_scorer(model: Any = "roberta-large-mnli", variant: str = "contradictions", **classifier_kwargs: Any) -> Any:
    """NLI Diversity of one set with a pair cache (:class:`dialeval.nli.core.NLISetScorer`).

    ``model``: Hub id, local path or a classifier object; ``variant``: ``"contradictions"`` (count of
    contradiction pairs, the paper's threshold criterion), ``"baseline"``, ``"neutral"`` or ``"confidence"``.
    """

    return NLISetScorer(get_classifier(model, **classifier_kwargs), variant)


def distinct_scorer(n: int | Sequence[int] = (1, 2), tokenizer: str = "casual") -> Scorer:
    """Mean Dist-n over orders ``n`` of the set's pooled n-grams (:mod:`dialeval.lexical.formulas`)."""
    from dialeval.lexical.formulas import corpus_distinct

    orders = check_positive_ints(n, "n")

    def score(responses: list[str]) -> float:
        values = corpus_distinct(responses, orders, tokenizer)
        return math.fsum(values[f"distinct_{k}"] for k in orders) / len(orders)

    return score


def mean_pairwise_cosine(embeddings: Any) -> float:
    """Mean cosine similarity over the n(n−1)/2 unordered pairs of rows of ``embeddings``."""
    x = np.asarray(embeddings, dtype=np.float64)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    x = x / np.where(norms == 0, 1.0, norms)
    sims = x @ x.T
    iu = np.triu_indices(len(x), k=1)
    return float(sims[iu].mean())


def embedding_scorer(encoder: Any) -> Scorer:
    """1 − mean pairwise cosine similarity of sentence embeddings; ``encoder`` has ``encode(list[str])``
    (e.g. a ``sentence_transformers.SentenceTransformer``)."""

    def score(responses: list[str]) -> float:
        return 1.0 - mean_pairwise_cosine(encoder.encode(list(responses)))

    return score


# ---------------------------------------------------------------------------------------------------
# transformers LMs


def context_ids(tokenizer: Any, context: str | Sequence[str], max_tokens: int, turn_separator: str = "\n") -> list[int]:
    """Token ids of ``context`` cut from the left to at most ``max_tokens`` ids including the special
    tokens the tokenizer adds (the paper gave BlenderBot the last 128 tokens)."""
    if isinstance(context, str):
        text = context
    elif isinstance(context, Sequence) and all(isinstance(t, str) for t in context):
        text = turn_separator.join(context)
    else:
        raise TypeError("`context` must be a string or a list of turns (strings).")
    if max_tokens - tokenizer.num_special_tokens_to_add(pair=False) < 1:
        raise ValueError(f"`max_context_tokens`={max_tokens} leaves no room for context tokens.")
    side = tokenizer.truncation_side
    try:
        tokenizer.truncation_side = "left"
        return list(tokenizer(text, truncation=True, max_length=max_tokens)["input_ids"])
    finally:
        tokenizer.truncation_side = side


def _max_positions(model: Any) -> int | None:
    cfg = model.config
    for name in ("n_positions", "max_position_embeddings", "n_ctx", "max_sequence_length"):
        value = getattr(cfg, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def lm_sampler(model: Any, tokenizer: Any, context: str | Sequence[str], *, top_p: float = 0.9,
               max_new_tokens: int = 40, max_context_tokens: int = 128, turn_separator: str = "\n",
               generate_kwargs: dict[str, Any] | None = None) -> Sampler:
    """``sample(k)``: k nucleus-sampled responses to ``context`` from a causal or encoder-decoder LM."""
    import torch

    encoder_decoder = bool(getattr(model.config, "is_encoder_decoder", False))
    budget = max_context_tokens
    positions = _max_positions(model)
    if positions is not None and not encoder_decoder:
        budget = min(budget, positions - max_new_tokens)
    elif positions is not None:
        budget = min(budget, positions)
    ids = context_ids(tokenizer, context, budget, turn_separator)
    if not ids:
        start = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
        if start is None:
            raise ValueError("empty `context` and the tokenizer has no BOS/EOS token to start from.")
        ids = [start]
    device = next(model.parameters()).device
    input_ids = torch.tensor([ids], device=device)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    options = {"do_sample": True, "top_p": top_p, "top_k": 0, "max_new_tokens": max_new_tokens,
               "pad_token_id": pad}
    options.update(generate_kwargs or {})

    def sample(k: int) -> list[str]:
        with torch.inference_mode():
            out = model.generate(input_ids=input_ids, attention_mask=torch.ones_like(input_ids),
                                 num_return_sequences=k, **options)
        new = out if encoder_decoder else out[:, input_ids.shape[1]:]
        return [t.strip() for t in tokenizer.batch_decode(new, skip_special_tokens=True)]

    return sample


def diversity_threshold_generation(
    model: Any,
    tokenizer: Any,
    context: str | Sequence[str],
    *,
    n: int = 5,
    top_p: float = 0.9,
    scorer: Scorer | None = None,
    threshold: float | None = None,
    max_samples: int = 20,
    inclusive: bool = True,
    max_new_tokens: int = 40,
    max_context_tokens: int = 128,
    seed: int = 0,
    nli_model: Any = "roberta-large-mnli",
    turn_separator: str = "\n",
    generate_kwargs: dict[str, Any] | None = None,
) -> ThresholdGenerationResult:
    """Sample a response set from ``model`` and resample until it is diverse enough (see module doc).

    ``scorer`` defaults to the number of contradiction pairs under ``nli_model`` with threshold
    :func:`default_contradiction_threshold` (10 of 20 for n = 5, reached when ``>=``; ``inclusive=False``
    asks for ``>``); a custom scorer needs an explicit ``threshold`` (see :func:`calibrate_threshold`).
    The run is seeded (``seed``) without touching the caller's global RNG state, so it is reproducible.
    """
    import torch

    _check_int(n, "n", 2)
    if not 0.0 < float(top_p) <= 1.0:
        raise ValueError(f"`top_p` must be in (0, 1], got {top_p!r}.")
    if scorer is None:
        scorer = nli_scorer(nli_model, "contradictions")
        threshold = default_contradiction_threshold(n) if threshold is None else threshold
    elif threshold is None:
        raise ValueError("a custom `scorer` needs an explicit `threshold` (the score a set must reach).")
    devices = [next(model.parameters()).device] if next(model.parameters()).is_cuda else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        sample = lm_sampler(model, tokenizer, context, top_p=top_p, max_new_tokens=max_new_tokens,
                            max_context_tokens=max_context_tokens, turn_separator=turn_separator,
                            generate_kwargs=generate_kwargs)
        return threshold_resample(sample, scorer, n=n, threshold=threshold, max_samples=max_samples,
                                  inclusive=inclusive)


@dataclass
class ThresholdGenerationTrials:
    """``trials`` seeded runs of Diversity Threshold Generation on one context: every run (``runs``, run
    k seeded ``seed + k``) and their means (``summary``, :func:`summarize_trials`)."""

    runs: list[ThresholdGenerationResult]
    summary: dict[str, float]
    seeds: list[int]

    def to_dict(self) -> dict[str, Any]:
        return {"runs": [r.to_dict() for r in self.runs], "summary": dict(self.summary), "seeds": list(self.seeds)}


def threshold_generation_trials(model: Any, tokenizer: Any, context: str | Sequence[str], *, trials: int = 10,
                                seed: int = 0, scorer: Scorer | None = None, nli_model: Any = "roberta-large-mnli",
                                report: Scorer | None = None, **kwargs: Any) -> ThresholdGenerationTrials:
    """The paper's protocol: :func:`diversity_threshold_generation` ``trials`` times (10 by default, seeds
    ``seed``…``seed + trials − 1``), one scorer (and its NLI pair cache) shared by all runs; ``report``
    scores the starting and ending sets for the summary (:func:`summarize_trials`)."""
    _check_int(trials, "trials", 1)
    if scorer is None:
        scorer = nli_scorer(nli_model, "contradictions")
        kwargs.setdefault("threshold", default_contradiction_threshold(kwargs.get("n", 5)))
    seeds = [seed + k for k in range(trials)]
    runs = [diversity_threshold_generation(model, tokenizer, context, scorer=scorer, seed=s, **kwargs) for s in seeds]
    return ThresholdGenerationTrials(runs, summarize_trials(runs, report), seeds)


def plot_threshold_generation(result: ThresholdGenerationResult, path: str) -> None:
    """Line plot of the set's score after each step against the threshold (matplotlib, Agg), saved to ``path``.

    Step 0 is the initial set of n samples; step k the set after the k-th replacement (slot annotated).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = list(range(len(result.scores)))
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(steps, result.scores, marker="o", label="set score")
    ax.axhline(result.threshold, color="tab:red", linestyle="--", label=f"threshold {result.threshold:g}")
    for k, step in enumerate(result.replacements, start=1):
        ax.annotate(f"slot {step['slot']}", (k, result.scores[k]), textcoords="offset points", xytext=(0, 6),
                    ha="center", fontsize=7)
    ax.set_xlabel("replacement step (0 = initial set)")
    ax.set_ylabel("diversity score")
    verdict = "reached" if result.reached_threshold else "not reached"
    ax.set_title(f"Diversity Threshold Generation: {result.num_samples} samples, threshold {verdict}", fontsize=9)
    ax.set_xticks(steps)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
