"""The one background thread of the live view: it takes a refresh every ``every_s`` seconds and
posts it to the App as a :class:`Refreshed` message, so the screen never waits on the server.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from textual.message import Message

from vacuumlab.records.live import Refresh

Fetch = Callable[[], Refresh]


class Refreshed(Message):
    """A refresh, posted from the refresher's thread."""

    def __init__(self, refresh: Refresh) -> None:
        super().__init__()
        self.refresh = refresh


class Refresher:
    """One thread: ``fetch`` every ``every_s`` seconds (from the start of one to the start of
    the next) unless paused, each result handed to ``deliver``; ``on_exit`` runs in the same
    thread once it stops, so whatever ``fetch`` uses is closed by the thread that used it."""

    def __init__(
        self,
        fetch: Fetch,
        every_s: float,
        deliver: Callable[[Refresh], object],
        on_exit: Callable[[], object] | None = None,
    ) -> None:
        self.fetch, self.every_s, self.deliver, self.on_exit = fetch, every_s, deliver, on_exit
        self.paused = False
        self.stopped = threading.Event()
        self.wake = threading.Event()
        self.thread = threading.Thread(target=self._run, name="vacuumlab-watch", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def pause(self, paused: bool) -> None:
        self.paused = paused
        self.wake.set()  # resuming refreshes at once

    def stop(self, wait_s: float = 2.0) -> None:
        """Stop, and wait a moment for a refresh under way (the session's timeouts bound it;
        the thread is a daemon, so a server that hangs cannot hold the exit)."""
        self.stopped.set()
        self.wake.set()
        if self.thread.is_alive():
            self.thread.join(wait_s)

    def _run(self) -> None:
        try:
            while not self.stopped.is_set():
                if self.paused:
                    self._sleep(None)
                    continue
                started = time.monotonic()
                refresh = self.fetch()
                if not self.stopped.is_set():
                    self.deliver(refresh)
                self._sleep(max(0.0, self.every_s - (time.monotonic() - started)))
        finally:
            if self.on_exit is not None:
                self.on_exit()

    def _sleep(self, seconds: float | None) -> None:
        self.wake.wait(seconds)
        self.wake.clear()
