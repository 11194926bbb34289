"""The published work a study reproduces, named the way a reader can find it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Publication:
    """A published post: users see its title, site and year, never a file name of ours."""

    title: str
    site: str
    year: int

    def cite(self) -> str:
        """``“Title” (site, year)``, for help, reports and docs."""
        return f"“{self.title}” ({self.site}, {self.year})"

    def short(self) -> str:
        """``site, year``: for a chart label or a table heading where the title is too long."""
        return f"{self.site}, {self.year}"
