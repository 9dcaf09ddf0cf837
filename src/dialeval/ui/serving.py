"""Server policy for the demo and the Spaces: what one client may ask of a shared server.

- **Models** (:class:`ServerPolicy`): on a public server (``SPACE_ID`` set, or bound to a non-loopback host)
  the model field accepts only the ids a metric offers (its declaration's ``models``) unless the operator
  starts it with ``--allow-local-models``; every refusal reads the same whatever exists on disk (no file
  probe), and a model field that is not text is refused.
- **Work** (:class:`RequestGate`): a request waits for one of ``concurrency`` slots that its computation holds
  until it really stops; a request that is cancelled (``job.cancel()``, the page closed) or whose client went
  away gets its :class:`~dialeval.models.runtime.CancelToken` set, so the computation stops at its next batch
  boundary (:func:`dialeval.models.runtime.run_batched`); each client may have at most ``max_jobs_per_client``
  requests waiting or running, counted when the request arrives (Gradio hands gated events to the gate with a
  wider dispatch limit, see :func:`prepare`, so a request past the limit is refused at once instead of queueing
  behind the running ones), and at most ``concurrency - 1`` of the slots, so another client always finds one.
- **Result files** (:class:`SessionFiles`): one temporary folder per session holding its few newest files,
  removed when the session has been idle an hour, when too many sessions are open, and when the server exits
  (also on SIGTERM); Gradio's own cache of returned and uploaded files is swept by age (``delete_cache``) and
  bounded by count and bytes (:mod:`dialeval.ui.file_cache`).
"""

from __future__ import annotations

import asyncio
import contextvars
import ipaddress
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from dialeval import registry
from dialeval.models.runtime import CancelToken, cancellation, env_int
from dialeval.ui.file_cache import start_sweeper
from dialeval.ui.inputs import InputError
from dialeval.ui.session_files import SessionFiles

LOOPBACK_NAMES = {"localhost", "ip6-localhost"}
#: The longest model field accepted (a Hub id is at most 96 characters; a local path rarely over a few hundred).
MAX_MODEL_NAME = 1024


def is_loopback(host: str | None) -> bool:
    """True for ``127.0.0.0/8``, ``::1``, ``localhost`` (and ``None``: Gradio's default 127.0.0.1)."""
    if host is None or host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def is_public(host: str | None = None) -> bool:
    """A server others can reach: a Hugging Face Space (``SPACE_ID``) or one bound to a non-loopback host."""
    return bool(os.environ.get("SPACE_ID")) or not is_loopback(host)


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


_ACTIVE: list[ServerPolicy] = []  # the policy of the server this process runs (set by Server.create)


def active_policy() -> ServerPolicy:
    """The policy of this process's server, else the environment's (public on a Space)."""
    return _ACTIVE[-1] if _ACTIVE else ServerPolicy.from_env()


@dataclass
class ServerPolicy:
    """What the model field accepts and how much one client may queue."""

    public: bool = False
    allow_local_models: bool = False
    max_jobs_per_client: int | None = None  # None: no limit

    @classmethod
    def from_env(cls, host: str | None = None, allow_local_models: bool | None = None) -> ServerPolicy:
        """``SPACE_ID``/``host`` decide ``public``; ``DIALEVAL_ALLOW_LOCAL_MODELS=1`` (or the argument) allows
        any model; ``DIALEVAL_MAX_JOBS_PER_CLIENT`` bounds one client's requests waiting or running (default:
        2 on a public server, no limit on this machine's own demo, where the one client is its operator)."""
        allow = _env_flag("DIALEVAL_ALLOW_LOCAL_MODELS") if allow_local_models is None else allow_local_models
        public = is_public(host)
        jobs = env_int("DIALEVAL_MAX_JOBS_PER_CLIENT", 2 if public else None)
        return cls(public=public, allow_local_models=allow, max_jobs_per_client=jobs)

    @property
    def restricts_models(self) -> bool:
        return self.public and not self.allow_local_models

    def check_model(self, metric: str, model: Any) -> str | None:
        """``model`` (stripped) when this server accepts it for ``metric``, ``None`` for the default; else
        :class:`InputError` with a message that depends only on the metric and the text given."""
        if model is None:
            return None
        if not isinstance(model, str):
            raise InputError(f"{metric}: the model field must be text (a model id), got {type(model).__name__}.")
        name = model.strip()
        if not name:
            return None
        longest = max(len(part.encode("utf-8", "surrogatepass")) for part in name.split("/"))
        if len(name) > MAX_MODEL_NAME or longest > 255 or "\0" in name:
            raise InputError(f"{metric}: the model field holds {len(name):,} characters; a Hub id or local path has "
                             f"at most {MAX_MODEL_NAME:,} (255 bytes per folder name) and no NUL. Give a model id.")
        if self.restricts_models:
            offered = registry.get(metric).models
            if name not in offered:
                raise InputError(f"{metric}: model {name[:80]!r} is not offered on this server; choose one of "
                                 f"{list(offered)}.")
        return name

    def check_selection(self, selected: dict[str, Any]) -> dict[str, str | None]:
        """Every selected metric's model through :meth:`check_model`."""
        return {name: self.check_model(name, model) for name, model in selected.items()}


# ---------------------------------------------------------------------------------------------------
# Work: slots held until the computation stops, cancellation, per-client limits


#: How many reverse proxies in front of the server append to ``X-Forwarded-For`` (default: 1 on a Space, 0 else).
TRUSTED_PROXIES_ENV = "DIALEVAL_TRUSTED_PROXIES"


def trusted_proxies() -> int:
    """``$DIALEVAL_TRUSTED_PROXIES``: the proxies whose ``X-Forwarded-For`` entries are trusted (1 on a Space:
    its proxy; 0 elsewhere: the socket peer is the client)."""
    return int(env_int(TRUSTED_PROXIES_ENV, 1 if os.environ.get("SPACE_ID") else 0, minimum=0) or 0)


def client_id(request: Any) -> str:
    """Who is asking, for the per-client limits. Behind ``n`` trusted proxies (:func:`trusted_proxies`) it is
    the ``n``-th ``X-Forwarded-For`` entry from the end: the address the outermost trusted proxy saw and
    appended. Entries before it are whatever the client sent (rotating them must not make a new client), so
    they are never used. Without trusted proxies, or when the header has fewer entries than proxies, it is the
    socket peer (Gradio's ``request.client``); the session hash when that is unknown too."""
    headers = getattr(request, "headers", None) or {}
    hops_behind = trusted_proxies()
    if hops_behind:
        forwarded = headers.get("x-forwarded-for", "") if hasattr(headers, "get") else ""
        hops = [hop.strip() for hop in str(forwarded).split(",") if hop.strip()]
        if len(hops) >= hops_behind:
            return hops[-hops_behind][:64]
    client = getattr(request, "client", None)
    host = getattr(client, "host", None)
    return str(host or getattr(request, "session_hash", None) or "anonymous")


def _client_gone(request: Any) -> bool:
    """True when Gradio has marked every running job of this request's session as no longer wanted (its
    event stream closed). Uses Gradio internals defensively: any surprise reads as "still there"."""
    session = getattr(request, "session_hash", None)
    try:
        from gradio.context import Context

        queue = Context.root_block._queue if Context.root_block is not None else None
        jobs = [job for job_set in (queue.active_jobs if queue else []) if job_set for job in job_set
                if getattr(job, "session_hash", None) == session]
        return bool(session) and bool(jobs) and all(not getattr(job, "alive", True) for job in jobs)
    except Exception:  # noqa: BLE001 - internals changed: never cancel by mistake
        return False


def _under_token(token: CancelToken, fn: Callable[..., Any], *args: Any) -> Any:
    with cancellation(token):
        return fn(*args)


@dataclass
class RequestGate:
    """Admission and slots for expensive requests (see the module docstring)."""

    concurrency: int = 2
    max_jobs_per_client: int | None = None
    poll_s: float = 0.2
    _slots: threading.BoundedSemaphore = field(init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _jobs: dict[str, int] = field(default_factory=dict, init=False, repr=False)
    _running: dict[str, int] = field(default_factory=dict, init=False, repr=False)
    _tokens: dict[str, set[CancelToken]] = field(default_factory=dict, init=False, repr=False)
    _pool: ThreadPoolExecutor = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._slots = threading.BoundedSemaphore(self.concurrency)
        self._pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="dialeval-request")

    def _admit(self, client: str) -> None:
        with self._lock:
            limit = self.max_jobs_per_client
            if limit is not None and self._jobs.get(client, 0) >= limit:
                raise InputError(f"this client already has {self.max_jobs_per_client} requests waiting or running; "
                                 "wait for them to finish (or cancel them) before sending more.")
            self._jobs[client] = self._jobs.get(client, 0) + 1

    def _leave(self, client: str) -> None:
        with self._lock:
            left = self._jobs.get(client, 1) - 1
            if left > 0:
                self._jobs[client] = left
            else:
                self._jobs.pop(client, None)

    @property
    def slots_per_client(self) -> int:
        """Slots one client may hold at once: all of them on a private server, else one fewer than there are
        (so that another client's request starts at once)."""
        if self.max_jobs_per_client is None:
            return self.concurrency
        return max(1, self.concurrency - 1)

    def _take_slot(self, client: str) -> bool:
        with self._lock:
            if self._running.get(client, 0) >= self.slots_per_client:
                return False
            if not self._slots.acquire(blocking=False):
                return False
            self._running[client] = self._running.get(client, 0) + 1
            return True

    def _free_slot(self, client: str) -> None:
        with self._lock:
            left = self._running.get(client, 1) - 1
            if left > 0:
                self._running[client] = left
            else:
                self._running.pop(client, None)
        self._slots.release()

    def jobs(self, client: str) -> int:
        with self._lock:
            return self._jobs.get(client, 0)

    def cancel_session(self, session: str | None, reason: str = "the session ended") -> int:
        """Cancel every running request of ``session`` (e.g. the page was closed); returns how many."""
        with self._lock:
            tokens = list(self._tokens.get(str(session), ()))
        for token in tokens:
            token.cancel(reason)
        return len(tokens)

    def _run_in_slot(self, client: str, token: CancelToken, ctx: contextvars.Context, fn: Callable[..., Any],
                     *args: Any) -> Any:
        try:
            if token.cancelled:
                return None
            return ctx.run(_under_token, token, fn, *args)  # the token is set inside the copied context
        finally:
            self._free_slot(client)  # only now: a cancelled request keeps its slot until it has stopped

    async def _slot(self, client: str, token: CancelToken, request: Any) -> None:
        waited = 0
        while not self._take_slot(client):
            waited += 1
            if token.cancelled or waited % 5 == 0 and _client_gone(request):
                raise asyncio.CancelledError
            await asyncio.sleep(self.poll_s)

    async def run(self, fn: Callable[..., Any], *args: Any, request: Any = None) -> Any:
        """``fn(*args)`` in a worker thread once a slot is free, under a cancel token that is set when this
        coroutine is cancelled or the client goes away; :class:`InputError` when the client has too many
        requests waiting or running."""
        client, session = client_id(request), str(getattr(request, "session_hash", None))
        self._admit(client)
        token = CancelToken()
        with self._lock:
            self._tokens.setdefault(session, set()).add(token)
        try:
            await self._slot(client, token, request)
            ctx = contextvars.copy_context()  # Gradio's progress tracking reads context variables
            future = asyncio.get_running_loop().run_in_executor(self._pool, self._run_in_slot, client, token, ctx,
                                                                fn, *args)
            try:
                while True:
                    done, _ = await asyncio.wait({future}, timeout=1.0)
                    if done:
                        return future.result()
                    if _client_gone(request):
                        token.cancel("the client disconnected")
            except asyncio.CancelledError:
                token.cancel("the request was cancelled")
                raise
        finally:
            with self._lock:
                tokens = self._tokens.get(session, set())
                tokens.discard(token)
                if not tokens:
                    self._tokens.pop(session, None)
            self._leave(client)


@dataclass
class Server:
    """Everything one demo process shares between requests: the policy, the gate and the files."""

    policy: ServerPolicy
    gate: RequestGate
    files: SessionFiles

    @classmethod
    def create(cls, concurrency: int, policy: ServerPolicy | None = None) -> Server:
        policy = policy or ServerPolicy.from_env()
        _ACTIVE[:] = [policy]
        return cls(policy, RequestGate(concurrency, policy.max_jobs_per_client), SessionFiles())

    def end_session(self, request: Any) -> None:
        """Cancel the session's requests and remove its files (for a host that knows the session ended)."""
        session = getattr(request, "session_hash", None)
        self.gate.cancel_session(session)
        self.files.end_session(session)


def gated(server: Server, handler: Callable[..., tuple[Any, ...]],
          refused: Callable[[str], tuple[Any, ...]]) -> Callable[..., Any]:
    """A Gradio event function that runs ``handler(request, *inputs)`` through ``server.gate`` (a slot held
    until the computation stops, cancellation, the per-client limit); a refused or cancelled request gets
    ``refused(message)``, the same one line the CLI would print."""
    import gradio as gr

    from dialeval.cli import error_line
    from dialeval.models.runtime import Cancelled

    async def on_event(progress: Any = gr.Progress(track_tqdm=True), request: Any = None,  # noqa: B008
                       *inputs: Any) -> tuple[Any, ...]:
        try:
            out = await server.gate.run(handler, request, *inputs, request=request)
        except (InputError, Cancelled) as exc:
            return refused(error_line(exc))
        return out if out is not None else refused("the request was cancelled")

    on_event.__annotations__ = {**on_event.__annotations__, "request": gr.Request}
    on_event.dialeval_gated = True  # type: ignore[attr-defined]  # see prepare()
    return on_event


#: Gradio's cache of returned and uploaded files: every minute, files older than 10 minutes are deleted.
GRADIO_CACHE_SWEEP = (60, 600)


def is_gated(fn: Any, depth: int = 3) -> bool:
    """True for an event function made by :func:`gated`, also when wrapped (e.g. to name its API parameters)
    by a function that calls it from its closure."""
    if getattr(fn, "dialeval_gated", False):
        return True
    cells = getattr(fn, "__closure__", None) or ()
    return depth > 0 and any(callable(c.cell_contents) and is_gated(c.cell_contents, depth - 1) for c in cells
                             if _filled(c))


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True


def dispatch_limit(concurrency: int) -> int:
    """Requests of a gated event Gradio hands to the gate at once: enough for the slots and the clients waiting
    for them (a refusal is immediate, so requests queued beyond this are answered within moments)."""
    return max(8, 4 * concurrency)


def prepare(demo: Any) -> Any:
    """Serving settings of a built ``gr.Blocks``: with a per-client limit, Gradio hands the events made by
    :func:`gated` to the gate :func:`dispatch_limit` at a time instead of ``concurrency`` (the gate bounds the
    work and refuses a client's request past its limit at once, instead of it waiting in Gradio's queue behind
    the running ones), and
    Gradio's file cache is swept by age (:data:`GRADIO_CACHE_SWEEP`) unless the app set its own, and bounded by
    count and bytes while the app runs (:func:`dialeval.ui.file_cache.start_sweeper`)."""
    gate = getattr(getattr(demo, "dialeval_server", None), "gate", None)
    for block_fn in getattr(demo, "fns", {}).values():
        if gate is not None and gate.max_jobs_per_client is not None and is_gated(block_fn.fn):
            block_fn.concurrency_limit = dispatch_limit(gate.concurrency)
    if getattr(demo, "delete_cache", None) is None:
        demo.delete_cache = GRADIO_CACHE_SWEEP
    start_sweeper(demo)
    return demo

