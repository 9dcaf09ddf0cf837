"""The lexical metrics' contract (torchmetrics style: the core validates and aggregates, adapters only
adapt): Dist-n/EAD-n, Ent-n and LF with their options checked, their defaults written once, scores
aggregated at corpus or set level, and a signature. The ``evaluate`` modules
(``metrics/<name>/<name>.py``) and meta-evaluation (:mod:`dialeval.meta.evaluation`) both call these.
The ``*_result`` functions finish a corpus result from merged n-gram counts, so the Ray engine
(:mod:`dialeval.distributed.states`) gives the same numbers and signature as one process. The math itself
is in :mod:`dialeval.lexical.formulas`.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

from dialeval.io.signature import make_signature
from dialeval.io.text import check_num_workers, get_tokenizer, tokenizer_name
from dialeval.io.validation import (
    ResultNote,
    check_positive_ints,
    check_text_sets,
    check_texts,
    is_int,
)
from dialeval.lexical import formulas as lexical
from dialeval.lexical.ngrams import NgramCounts, count_ngrams
from dialeval.registry import Adapter, response_sets
from dialeval.registry import get as get_declaration

DEFAULT_ORDERS = (1, 2, 3)
TEVET_ORDERS = (1, 2, 3, 4, 5)
LEVELS = ("corpus", "set")


def resolve_orders(tokenizer: Any, n: Any) -> tuple[int, ...]:
    """Validate ``tokenizer`` and ``n``; ``n=None`` means 1..5 for the ``tevet`` preset, else 1..3."""
    get_tokenizer(tokenizer)
    if n is None:
        n = TEVET_ORDERS if tokenizer == "tevet" else DEFAULT_ORDERS
    return check_positive_ints(n, "n")


def check_level(level: Any) -> str:
    if level not in LEVELS:
        raise ValueError(f"`level`={level!r} is not known; use 'corpus' or 'set'.")
    return level


def check_vocab_size(vocab_size: Any) -> int | None:
    if vocab_size is None:
        return None
    if not is_int(vocab_size) or vocab_size < 2:
        raise ValueError(f"`vocab_size` must be an int ≥ 2 (the generator's vocabulary size), got {vocab_size!r}.")
    return int(vocab_size)


def check_base(base: Any) -> float:
    if isinstance(base, bool) or not isinstance(base, (int, float)) or not math.isfinite(base) or base <= 0 \
            or base == 1:
        raise ValueError(f"`base` must be a positive number other than 1 (2 for bits, math.e for nats), got {base!r}.")
    return float(base)


def check_threshold(threshold: Any) -> int:
    if not is_int(threshold) or threshold < 0:
        raise ValueError(f"`threshold` must be an int ≥ 0, got {threshold!r}.")
    return int(threshold)


def corpus_texts(predictions: Any) -> list[str]:
    if predictions is not None and not isinstance(predictions, str) and len(predictions) \
            and isinstance(predictions[0], (list, tuple)):
        raise TypeError("`predictions` holds lists of responses; pass level='set' to score response sets.")
    return check_texts(predictions, "predictions")


def _mean(values: list[float]) -> float:
    return math.fsum(values) / len(values)


def check_counted(state: NgramCounts) -> None:
    """Refuse counts of no text (an empty corpus has no Dist/Ent/LF)."""
    if state.num_texts == 0:
        raise ValueError("`predictions` is empty; pass at least one response.")


def check_vocab_fits(state: NgramCounts, vocab_size: int | None, where: str = "the responses") -> None:
    """Refuse a ``vocab_size`` V too small for the counts of ``where`` (the corpus, or one response set).

    EAD-n (Liu et al., ACL 2022, "Rethinking and Refining the Distinct Metric") = N / (V · (1 − ((V−1)/V)^C)),
    N distinct n-grams among C. A vocabulary of V tokens forms at most V^n distinct n-grams, so N > V^n means V
    is not the generator's vocabulary and EAD-n is meaningless (5 distinct unigrams among 5 with V = 3:
    EAD = 5 / 2.605 = 1.92). N above the expectation alone is not refused: a set whose tokens all differ has
    N = C, just above V · (1 − ((V−1)/V)^C) at any real V (C = 10, V = 50257: EAD = 1.00009)."""
    for n in state.orders if vocab_size is not None else ():
        distinct = state.distinct(n)
        if distinct > vocab_size ** n:
            ead = lexical.expectation_adjusted_distinct(distinct, state.total(n), vocab_size)
            raise ValueError(f"distinct_n: `vocab_size`={vocab_size} is too small for {where}: it holds {distinct} distinct {n}-grams, "
                             f"more than the {vocab_size}^{n} a vocabulary of {vocab_size} can form (EAD-{n} would be "
                             f"{ead:.4g}); pass the generator's real vocabulary size (e.g. len(tokenizer)) as vocab_size.")


def distinct_result(state: NgramCounts, vocab_size: int | None = None) -> dict[str, Any]:
    """Corpus Dist-n (EAD-n with ``vocab_size``, checked by :func:`check_vocab_size` and
    :func:`check_vocab_fits`), their mean over n and the signature, from n-gram counts."""
    check_counted(state)
    check_vocab_fits(state, vocab_size)
    out: dict[str, Any] = lexical.distinct_scores(state, vocab_size)
    out["distinct_mean"] = _mean([out[f"distinct_{k}"] for k in state.orders])
    out["signature"] = make_signature("distinct_n", tok=state.tokenizer_id, n=state.orders, level="corpus",
                                      vocab=vocab_size)
    return out


def ent_result(state: NgramCounts, base: float = 2.0) -> dict[str, Any]:
    """Corpus Ent-n (``base`` checked by :func:`check_base`) and the signature, from n-gram counts."""
    check_counted(state)
    out: dict[str, Any] = lexical.entropy_scores(state, base)
    out["signature"] = make_signature("ent_n", tok=state.tokenizer_id, n=state.orders, base=base, level="corpus")
    return out


def low_frequency_result(state: NgramCounts, threshold: int, reference: dict[str, int] | None = None,
                         source: str = "predictions") -> dict[str, Any]:
    """LF and the signature from unigram counts; ``reference`` counts (named by ``source``) replace the
    predictions' own counts when given."""
    check_counted(state)
    out = {
        "low_frequency": lexical.low_frequency_share(state.counts[1], threshold, reference),
        "signature": make_signature("low_frequency", tok=state.tokenizer_id, n=1, threshold=threshold,
                                    counts=source, level="corpus"),
    }
    counts = state.counts[1]
    if reference is None and counts and max(counts.values()) <= threshold:
        out["note"] = (f"no token occurs more than threshold={threshold} times in these {sum(counts.values())} "
                       "tokens, so LF is 1.0 by construction; pass the training corpus as reference_texts= or "
                       "reference_counts= (Li et al. 2020 count there) or lower the threshold.")
        warnings.warn(f"low_frequency: {out['note']}", ResultNote, stacklevel=3)
    return out


def _refuse_both_references(reference_counts: Any, reference_texts: Any) -> None:
    if reference_counts is not None and reference_texts is not None:
        raise ValueError("pass either `reference_counts` or `reference_texts`, not both.")


def check_low_frequency_reference(reference_counts: Any = None, reference_texts: Any = None) -> dict[str, int] | None:
    """Refuse both LF reference options at once; validate ``reference_counts`` (returned, or ``None``)."""
    _refuse_both_references(reference_counts, reference_texts)
    return None if reference_counts is None else _reference_counts(reference_counts)


def low_frequency_reference(tokenizer: Any, checked_counts: dict[str, int] | None = None, reference_texts: Any = None,
                            num_workers: int = 0) -> tuple[dict[str, int] | None, str]:
    """LF's reference counts and their source name (``predictions`` when neither is given);
    ``checked_counts`` come from :func:`check_low_frequency_reference`."""
    if reference_texts is not None:
        texts = check_texts(reference_texts, "reference_texts")
        return dict(lexical.unigram_counts(texts, tokenizer, num_workers=num_workers)), "reference_texts"
    return (checked_counts, "reference_counts") if checked_counts is not None else (None, "predictions")


def compute_distinct(predictions: Any, n: Any = None, tokenizer: Any = "casual", level: str = "corpus",
                     vocab_size: int | None = None, num_workers: int = 0) -> dict[str, Any]:
    """Dist-n (and EAD-n with ``vocab_size``) at corpus level, or averaged over response sets
    (``level="set"``: also ``scores``, each set's mean over n, and ``scores_by_n``), with a signature."""
    orders, level, vocab = resolve_orders(tokenizer, n), check_level(level), check_vocab_size(vocab_size)
    if level == "corpus":
        return distinct_result(count_ngrams(corpus_texts(predictions), orders, tokenizer,
                                            num_workers=check_num_workers(num_workers)), vocab)
    per_set = lexical.distinct_n_per_set(
        check_text_sets(predictions, "predictions"), orders, tokenizer, vocab,
        check=lambda counts, i: check_vocab_fits(counts, vocab, f"response set predictions[{i}]"))
    keys = [k for k in per_set[0] if k != "distinct_mean"] + ["distinct_mean"]
    out: dict[str, Any] = {k: _mean([s[k] for s in per_set]) for k in keys}
    out["scores"] = [s["distinct_mean"] for s in per_set]
    out["scores_by_n"] = {k: [s[k] for s in per_set] for k in keys if k != "distinct_mean"}
    out["signature"] = make_signature("distinct_n", tok=tokenizer_name(tokenizer), n=orders, level=level, vocab=vocab)
    return out


def compute_ent(predictions: Any, n: Any = None, tokenizer: Any = "casual", base: float = 2.0,
                level: str = "corpus", num_workers: int = 0) -> dict[str, Any]:
    """Ent-n of the corpus n-gram distribution, or (``level="set"``) ``scores``: each response set's
    Ent-n averaged over n; with a signature."""
    orders, base, level = resolve_orders(tokenizer, n), check_base(base), check_level(level)
    if level == "corpus":
        return ent_result(count_ngrams(check_texts(predictions, "predictions"), orders, tokenizer,
                                       num_workers=check_num_workers(num_workers)), base)
    sets = check_text_sets(predictions, "predictions")
    out: dict[str, Any] = {"scores": [_mean(list(lexical.ent_n(s, orders, tokenizer, base).values())) for s in sets]}
    out["signature"] = make_signature("ent_n", tok=tokenizer_name(tokenizer), n=orders, base=base, level=level)
    return out


def _reference_counts(reference_counts: Any) -> dict[str, int]:
    if not isinstance(reference_counts, dict):
        raise TypeError("`reference_counts` must be a dict mapping token -> count.")
    bad = [k for k, v in reference_counts.items() if not isinstance(k, str) or not is_int(v) or v < 0]
    if bad:
        raise TypeError(f"`reference_counts` must map token strings to counts ≥ 0; bad entry "
                        f"{bad[0]!r}: {reference_counts[bad[0]]!r}.")
    return {k: int(v) for k, v in reference_counts.items()}


def compute_low_frequency(predictions: Any, threshold: int = 100, tokenizer: Any = "casual",
                          reference_counts: Any = None, reference_texts: Any = None,
                          num_workers: int = 0) -> dict[str, Any]:
    """LF: share of tokens whose count (in the predictions, ``reference_texts`` or ``reference_counts``)
    is at most ``threshold``; with a signature."""
    get_tokenizer(tokenizer)
    threshold, workers = check_threshold(threshold), check_num_workers(num_workers)
    _refuse_both_references(reference_counts, reference_texts)  # before the predictions: a usage error
    texts = check_texts(predictions, "predictions")
    counts = None if reference_counts is None else _reference_counts(reference_counts)
    reference, source = low_frequency_reference(tokenizer, counts, reference_texts, workers)
    return low_frequency_result(count_ngrams(texts, (1,), tokenizer, num_workers=workers), threshold, reference, source)


# -- meta-evaluation adapters (declared as ``meta_adapter``): rows of conTest/decTest → per-set scores ------
def _lexical_options(options: dict[str, Any], metric: str) -> dict[str, Any]:
    """The metric's declared options (scoring is per set), checked before any scoring; the tokenizer
    defaults to ``tevet`` (Tevet's preset, n = 1..5), the meta-evaluation protocol."""
    allowed = {o.name for o in get_declaration(metric).options} - {"level"}
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise ValueError(f"unknown option(s) {unknown}; known: {sorted(allowed)}.")
    opts = {"tokenizer": "tevet", **options}
    resolve_orders(opts["tokenizer"], opts.get("n"))
    return opts


def _set_scores(result: dict[str, Any]) -> dict[str, Any]:
    return {"scores": result["scores"], "signature": result["signature"]}


def distinct_set_adapter(options: dict[str, Any], config: str) -> Adapter:
    """Per-set Dist-n averaged over n (``distinct_n`` with ``level="set"``; with the ``tevet`` tokenizer this
    is Tevet's AveragedDistinctNgrams). Uses the metric's core, so no ``evaluate`` import is needed."""
    opts = _lexical_options(options, "distinct_n")
    return lambda rows: _set_scores(compute_distinct(response_sets(rows), level="set", **opts))


def ent_set_adapter(options: dict[str, Any], config: str) -> Adapter:
    """Per-set Ent-n averaged over n (entropy of the set's pooled n-gram distribution)."""
    opts = _lexical_options(options, "ent_n")
    return lambda rows: _set_scores(compute_ent(response_sets(rows), level="set", **opts))
