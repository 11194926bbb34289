"""One module per study (a :class:`vacuumlab.lab.StudyRun`: its matrix, set-up and
``measure_point``) and its spec (``*_spec.py``: what it stores, the published work and figures
it reproduces). The lab's registry (:mod:`vacuumlab.lab.registry`) names every study."""
