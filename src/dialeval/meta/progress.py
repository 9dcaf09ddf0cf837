"""Progress lines of a long leaderboard run: whatever step runs (reading a file, scoring a metric on a unit, a
unit's statistics, the clusters and summary), a line says what and for how long at least every ``every`` seconds,
written from a background thread, so a single long step (100,000 rows through one metric) is never silent."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from types import TracebackType

Log = Callable[[str], None]


class Heartbeat:
    """``with Heartbeat(log, every) as beat: beat.doing("metric / data / turn: scoring 200 rows")``: while a step
    runs longer than ``every`` seconds, ``log`` gets ``"<step>, <seconds> s"`` every ``every`` seconds."""

    def __init__(self, log: Log, every: float) -> None:
        self.log, self.every = log, float(every)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._what: str | None = None
        self._since = self._last = time.perf_counter()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Heartbeat:
        self._thread = threading.Thread(target=self._run, name="dialeval-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def doing(self, what: str) -> None:
        """A new step starts: the next line comes ``every`` seconds from now unless it ends before."""
        with self._lock:
            self._what = what
            self._since = self._last = time.perf_counter()

    def elapsed(self) -> float:
        """Seconds since the current step started."""
        with self._lock:
            return time.perf_counter() - self._since

    def _run(self) -> None:
        while not self._stop.wait(max(min(self.every / 4, 1.0), 0.01)):
            with self._lock:
                now = time.perf_counter()
                if self._what is None or now - self._last < self.every:
                    continue
                self._last = now
                line = f"{self._what}, {now - self._since:.0f} s"
            self.log(line)
