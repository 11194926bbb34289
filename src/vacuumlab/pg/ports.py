"""The sandbox's TCP port: finding a free one, asking whether one is free, and refusing a port
given as a setting."""

from __future__ import annotations

import socket
from collections.abc import Mapping

from vacuumlab.errors import VacuumlabError


def refuse_port(settings: Mapping[str, object]) -> None:
    """The port is no setting like the others: the server is started with ``-p``, which
    beats the configuration files (guc.h, GucSource: PGC_S_ARGV ranks above PGC_S_FILE,
    where postgresql.auto.conf is read), so an ALTER SYSTEM of port would never take."""
    if "port" in settings:
        raise VacuumlabError(
            "the sandbox's port is not set with --set or configure: use "
            "`vacuumlab sandbox start --port N` (after `vacuumlab sandbox stop` if it runs)"
        )


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def port_is_free(port: int) -> bool:
    """Whether the server could listen on ``port``. SO_REUSEADDR as the postmaster sets it
    (pqcomm.c, ListenServerPort), so connections still in TIME_WAIT from the sandbox's last
    run do not count as taking its port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True
