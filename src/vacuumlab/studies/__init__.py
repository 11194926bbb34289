"""One module per study (a :class:`vacuumlab.studies.base.StudyRun`: its matrix, set-up and
``measure_point``). What a study stores, the published work and figures it reproduces, is its
spec in :mod:`vacuumlab.records` (``records/*_spec.py``), so a report reads it without loading
the study. The lab's registry (:mod:`vacuumlab.lab.registry`) names every study."""
