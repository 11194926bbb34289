"""Every typed, frozen record that crosses a boundary: the snapshot, the advice, each study's
parameters, each study's spec (``*_spec.py``: what its run stores and its report reads, and the
published work it reproduces) and the timelines a study writes for its report. Records import
nothing of vacuumlab but :mod:`vacuumlab.errors`, so any layer may use them."""
