"""The one exception type the CLI turns into a one-line message and exit code 2."""


class VacuumlabError(Exception):
    """A problem the user can act on: bad input, an unreachable server, a broken file.

    The message is one line, names the problem and, where possible, the fix.
    """


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived. A BaseException, like KeyboardInterrupt, so that ``except
    Exception`` does not swallow it, but its own type so that the CLI framework does not
    turn it into a generic abort: ``with`` blocks unwind and sandboxes stop on the way out."""
