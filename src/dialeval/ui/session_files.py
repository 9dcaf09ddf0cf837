"""Result files of the demo and the Spaces: one temporary folder per session holding its few newest files,
removed when the session has been idle an hour, when too many sessions are open, and when the server exits
(also on SIGTERM)."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
import time
import uuid
from collections import OrderedDict
from pathlib import Path
from typing import Any

from dialeval.io.files import remove_temporaries_on_sigterm


class SessionFiles:
    """Result files under one temporary root, one sub-folder per session. A session keeps its ``per_session``
    newest files (older ones go after a two-minute grace); a session unused for ``max_age_s`` or beyond the ``max_sessions`` most recent is removed
    (checked on every write), and the root is removed when the process exits."""

    def __init__(self, max_sessions: int = 256, per_session: int = 4, max_age_s: float = 3600.0,
                 root: str | os.PathLike | None = None) -> None:
        self.root = Path(root) if root is not None else Path(tempfile.mkdtemp(prefix="dialeval-results-"))
        self.root.mkdir(parents=True, exist_ok=True)
        self.max_sessions, self.per_session, self.max_age_s = max_sessions, per_session, max_age_s
        self.grace_s = 120.0  # a returned file is copied by Gradio right after the request; keep it that long
        self._sessions: OrderedDict[str, tuple[Path, float]] = OrderedDict()
        self._lock = threading.Lock()
        atexit.register(self.cleanup)
        remove_temporaries_on_sigterm()  # SIGTERM → SystemExit, so the atexit cleanup above runs

    @staticmethod
    def _safe(session: Any) -> str:
        return "".join(c for c in str(session) if c.isalnum() or c in "-_")[:64] or "anonymous"

    def _folder(self, session: Any) -> tuple[Path, list[Path]]:
        """The session's folder (made if needed) and the folders of expired sessions (to remove)."""
        safe, now = self._safe(session), time.monotonic()
        with self._lock:
            folder = self._sessions.pop(safe, (None, 0.0))[0]
            if folder is None or not folder.is_dir():
                folder = Path(tempfile.mkdtemp(prefix=f"{safe}-", dir=self.root))
            self._sessions[safe] = (folder, now)
            expired = []
            while len(self._sessions) > self.max_sessions or (
                    self._sessions and next(iter(self._sessions.values()))[1] < now - self.max_age_s):
                expired.append(self._sessions.popitem(last=False)[1][0])
        return folder, expired

    def write_json(self, session: Any, data: Any) -> str:
        """Write ``data`` to a new file in the session's folder and return its path (older files pruned)."""
        from dialeval.io.files import atomic_write_json

        folder, expired = self._folder(session)
        for old in expired:
            shutil.rmtree(old, ignore_errors=True)
        path = atomic_write_json(folder / f"dialeval-results-{uuid.uuid4().hex[:12]}.json", data)
        self._prune(folder)
        return str(path)

    def _prune(self, folder: Path) -> None:
        """Drop files beyond the ``per_session`` newest once Gradio has had ``grace_s`` to copy them."""
        stamped = []
        for f in folder.glob("dialeval-results-*.json"):
            try:
                stamped.append((f.stat().st_mtime, f))
            except FileNotFoundError:
                continue
        stamped.sort(reverse=True)
        cutoff = time.time() - self.grace_s
        for mtime, f in stamped[self.per_session:]:
            if mtime < cutoff:
                f.unlink(missing_ok=True)

    def end_session(self, session: Any) -> None:
        """Remove the session's folder."""
        with self._lock:
            folder = self._sessions.pop(self._safe(session), (None, 0.0))[0]
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)

    def cleanup(self) -> None:
        with self._lock:
            self._sessions.clear()
        shutil.rmtree(self.root, ignore_errors=True)
