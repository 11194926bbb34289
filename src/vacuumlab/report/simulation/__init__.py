"""A simulation (``vacuumlab simulate``) in the terminal, in Markdown and as one HTML page with
its worker timeline. Pure: it reads the :class:`~vacuumlab.records.simulation.Simulation`
record only. Relation names came from the database: they are never markup in the terminal,
escaped in Markdown and autoescaped in HTML.

`data` picks the busiest relations and the worker use an hour at a time, `view` the title,
the header's facts and a row per relation; `text`, `markdown` and `html` write them out, and
`charts` draws the page's timeline (only the HTML loads matplotlib).
"""
