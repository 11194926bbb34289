"""The live view's pop-ups: one relation in full, and the keys."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from vacuumlab.tui import rows


class DetailScreen(ModalScreen[None]):
    """One relation in full, redrawn at every refresh while it is open."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,enter,q", "app.pop_screen", "Close"),
    ]

    def __init__(self, key: str, lines: Sequence[Text]) -> None:
        super().__init__()
        self.key = key  # the queue row's (rows.row_key())
        self.lines = lines

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="detail"):
            yield Static(Text("\n").join(self.lines), id="detail-body")

    def show(self, lines: Sequence[Text]) -> None:
        self.query_one("#detail-body", Static).update(Text("\n").join(lines))


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,enter,q,question_mark", "app.pop_screen", "Close"),
    ]

    def compose(self) -> ComposeResult:
        text = Text("vacuumlab watch: keys\n\n", style="bold")
        for key, what in rows.HELP:
            text.append(f"{key:>14}  ", style="bold cyan")
            text.append(f"{what}\n")
        text.append(
            "\nThe queue is in the order autovacuum would take the relations: being vacuumed, "
            "then due (heaps in pg_class order, then TOAST relations), then by the start the "
            "simulator predicts. Rates and starts need two refreshes."
        )
        with VerticalScroll(id="help"):
            yield Static(text)
