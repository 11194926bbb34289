"""Running studies: where a run happens and where its results go (:mod:`.targets`), the
registry of studies with the one way to start any of them (:mod:`.registry`), and advice
measured on a server (:mod:`.verify`). What a study is, its run loop and the progress protocol,
is :mod:`vacuumlab.studies.base`: the lab imports the studies, never the reverse.

Nothing here draws on a terminal: the command line owns that.
"""

from vacuumlab.lab.targets import Where, default_store

__all__ = ["Where", "default_store"]
