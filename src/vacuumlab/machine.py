"""The machine a run ran on: what its results depend on besides the server."""

from __future__ import annotations

import os
import platform
import socket
from typing import Any

from vacuumlab import __version__


def machine_info() -> dict[str, Any]:
    """What the results depend on besides the server: host, platform, CPUs, memory, versions."""
    return {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "memory_bytes": _total_memory(),
        "vacuumlab_version": __version__,
    }


def _total_memory() -> int | None:
    """Total physical memory in bytes, or None where neither source is available."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024  # the kernel reports kB
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None
