"""The one exception type the CLI turns into a one-line message and exit code 2, and the
interruption (SIGINT, SIGTERM) that unwinds ``with`` blocks on the way out."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Callable, Iterator


class VacuumlabError(Exception):
    """A problem the user can act on: bad input, an unreachable server, a broken file.

    The message is one line, names the problem and, where possible, the fix.
    """


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived. A BaseException, like KeyboardInterrupt, so that ``except
    Exception`` does not swallow it, but its own type so that the CLI framework does not
    turn it into a generic abort: ``with`` blocks unwind and sandboxes stop on the way out."""


@contextlib.contextmanager
def signals_to(handler: Callable[[int, object], None]) -> Iterator[None]:
    """SIGINT and SIGTERM go to ``handler`` inside the block; to their earlier handlers after."""
    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


@contextlib.contextmanager
def interrupt_on_signals() -> Iterator[None]:
    """Turn SIGINT and SIGTERM into :class:`Interrupted` so ``with`` blocks unwind."""

    def handler(signum: int, frame: object) -> None:
        raise Interrupted(signal.Signals(signum).name)

    with signals_to(handler):
        yield
