"""Stops a sandbox server when the process that started it is gone.

``python -m vacuumlab.pg.watchdog PARENT_PID PG_CTL PGDATA``: polls twice a second; when the
parent has died (even by SIGKILL, which runs no cleanup) it runs ``pg_ctl stop``. It exits on
its own when the server is no longer running, or when SIGTERM'd by a parent that stopped it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from vacuumlab.pg.install import server_user


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def main(argv: list[str]) -> int:
    parent, pg_ctl, pgdata = int(argv[0]), argv[1], Path(argv[2])
    while (pgdata / "postmaster.pid").exists():
        # A parent that died is re-parented: its pid vanishes, or our ppid changes.
        if not _alive(parent) or os.getppid() != parent:
            uid, gid = server_user()
            subprocess.run(
                [pg_ctl, "-D", str(pgdata), "-m", "fast", "-w", "stop"],
                capture_output=True,
                check=False,
                user=uid,
                group=gid,
            )
            return 0
        time.sleep(0.5)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
