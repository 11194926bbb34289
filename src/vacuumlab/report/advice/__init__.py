"""The advisor's report (``vacuumlab advise``): what to change first, the findings by DBA
question, where each table stands and what was not collected, in the terminal, in Markdown and
as one HTML page. Pure: it reads the :class:`~vacuumlab.records.advice.Advice` record only.

`view` builds the view model the Markdown and the HTML share (plain strings, in display
order); `markdown` writes it out and `html` fills the template ``advice.html.j2``; `text` draws
the terminal's tables from the record. Each output is a module of its own, imported only when
it is asked for: the terminal's loads no template engine.
"""
