"""Running studies: one run loop for every study (:mod:`.run`), one progress protocol
(:mod:`.progress`), where a run happens and where its results go (:mod:`.targets`), and the
registry of studies with the one way to start any of them (:mod:`.registry`).

Nothing here draws on a terminal: the command line owns that.
"""

from vacuumlab.lab.progress import Progress, Silent
from vacuumlab.lab.run import SCHEMA, Measured, Planned, StudyRun
from vacuumlab.lab.targets import Where, default_store

__all__ = [
    "SCHEMA",
    "Measured",
    "Planned",
    "Progress",
    "Silent",
    "StudyRun",
    "Where",
    "default_store",
]
