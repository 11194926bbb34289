"""HOT and fillfactor: whether updates stay on their page as heap-only tuples, and when a
lower fillfactor would let them.

An update is HOT when no indexed column changes and the new version fits on the old one's
page; it then adds no index entries and its dead version can be pruned without a vacuum
(docs: "Heap-Only Tuples (HOT)", src/backend/access/heap/README.HOT). ``n_tup_newpage_upd``
(PostgreSQL 16+) counts updates whose new version went to another page — never HOT. Many of
those and few HOT updates mean pages run out of room, which free space left by fillfactor
fixes; few HOT updates but few new-page ones mean an indexed column changes, which no
fillfactor fixes.

heap_update() in heapam.c decides HOT only for a new version that stays on its page
(``newbuf == buffer``) and changes no indexed column. So the updates that stayed on their page
tell the two causes apart: if even those were not HOT, an indexed column changes, and the ones
that left their page (a table whose vacuum is off or behind fills its pages) would not be HOT
with free space either. And while a horizon holder counts, pruning frees nothing on the page:
updates leave it whatever the fillfactor.
"""

from __future__ import annotations

from dataclasses import dataclass

from vacuumlab.advise import horizon
from vacuumlab.advise.context import Context, alter_table, label
from vacuumlab.records.advice import Finding, Recommendation, Severity, Value
from vacuumlab.records.snapshot import Relation

#: Fewer updates than this say little about a table's HOT share.
MIN_UPDATES = 1000
#: New-page updates from this share on are worth free space on the page.
NEWPAGE_HIGH = 0.2
#: ...and from this share on, a lot of it.
NEWPAGE_VERY_HIGH = 0.5
#: Below this HOT share updates mostly miss HOT.
HOT_LOW = 0.5
#: A share below this counts as none.
NONE = 0.05
#: Fewer updates than this staying on their page say nothing of why they were not HOT.
MIN_STAYED = 100
#: A fillfactor rewrite needs the window's updates to cover the table's rows this many times:
#: the first update of each row on pages packed full by a load always leaves its page, so
#: one pass (a bulk UPDATE, or the start of a workload) says nothing of the steady pattern.
MIN_PASSES = 2.0
#: Fillfactor is not lowered below this: half-empty pages cost more than they save.
MIN_FILLFACTOR = 50


@dataclass(frozen=True, slots=True)
class Updates:
    """Update counts over the interval between two snapshots, or since the stats reset."""

    updates: int
    hot: int
    newpage: int | None
    window: str

    @property
    def hot_share(self) -> float:
        return self.hot / self.updates

    @property
    def newpage_share(self) -> float | None:
        return None if self.newpage is None else self.newpage / self.updates

    @property
    def stayed_hot_share(self) -> float | None:
        """The HOT share of the updates whose new version stayed on its page. Those had
        room, so only a changed indexed column kept them from being HOT (heap_update() in
        heapam.c); None when too few stayed to tell."""
        if self.newpage is None or self.updates - self.newpage < MIN_STAYED:
            return None
        return self.hot / (self.updates - self.newpage)


def findings(ctx: Context) -> list[Finding]:
    found = []
    for table in ctx.tables():
        counts = updates(ctx, table.heap)
        if counts is not None:
            found.append(_finding(ctx, table.heap, counts))
    return found


def updates(ctx: Context, rel: Relation) -> Updates | None:
    """The interval's counts when it saw enough updates, else the cumulative ones."""
    before = ctx.earlier(rel)
    if before is not None:
        interval = _difference(before, rel)
        if interval is not None and interval.updates >= MIN_UPDATES:
            return interval
    if rel.n_tup_upd is None or rel.n_tup_hot_upd is None or rel.n_tup_upd < MIN_UPDATES:
        return None
    return Updates(rel.n_tup_upd, rel.n_tup_hot_upd, rel.n_tup_newpage_upd, "since stats reset")


def _difference(before: Relation, after: Relation) -> Updates | None:
    if None in (before.n_tup_upd, after.n_tup_upd, before.n_tup_hot_upd, after.n_tup_hot_upd):
        return None
    upd = (after.n_tup_upd or 0) - (before.n_tup_upd or 0)
    hot = (after.n_tup_hot_upd or 0) - (before.n_tup_hot_upd or 0)
    newpage = None
    if before.n_tup_newpage_upd is not None and after.n_tup_newpage_upd is not None:
        newpage = after.n_tup_newpage_upd - before.n_tup_newpage_upd
    if upd <= 0 or hot < 0 or (newpage is not None and newpage < 0):
        return None  # the statistics were reset in between
    return Updates(upd, hot, newpage, "interval")


def _finding(ctx: Context, rel: Relation, u: Updates) -> Finding:
    newpage = u.newpage_share
    stayed_hot = u.stayed_hot_share
    if newpage is not None and stayed_hot is not None and stayed_hot < NONE:
        return _indexed(rel, u)  # even the updates that had room were not HOT
    if newpage is not None and newpage >= NEWPAGE_HIGH:
        return _leaving(ctx, rel, u, newpage)
    if u.hot_share < NONE and (newpage is None or newpage < NONE):
        return _indexed(rel, u)
    if u.hot_share < HOT_LOW:
        title = f"HOT share {u.hot_share:.0%}: many updates change an indexed column"
        detail = (
            "Most updates are not HOT although few leave their page: "
            "an indexed column changes. Each such update adds an entry to every index. "
            "Fillfactor will not help; fewer or narrower indexes on updated columns would."
        )
        return _make(rel, u, "info", title, detail)
    title = f"HOT share {u.hot_share:.0%}: updates mostly stay on their page"
    return _make(rel, u, "info", title, "Nothing to change for HOT.")


def _leaving(ctx: Context, rel: Relation, u: Updates, newpage: float) -> Finding:
    """Updates that leave their page: a fillfactor step down, with its price."""
    current = int(_number(rel.reloptions.get("fillfactor")) or 100)
    wanted = 80 if newpage >= NEWPAGE_VERY_HIGH else 90
    target = min(wanted, current - 10)
    severity: Severity = "warning" if u.hot_share < HOT_LOW else "info"
    title = f"{newpage:.0%} of updates leave their page; HOT share {u.hot_share:.0%}"
    if target < MIN_FILLFACTOR:
        detail = (
            f"Fillfactor is already {current}: rows grow more than the free space a page can "
            "keep. Consider moving the growing columns to a table of their own."
        )
        return _make(rel, u, severity, title, detail)
    growth = 100 / target - 1
    detail = (
        f"The new version did not fit on its page in {u.newpage:,} of {u.updates:,} updates "
        f"({u.window}). A fillfactor of {target} keeps {100 - target} % of each page free for "
        f"them, so they can stay HOT when no indexed column changes. The price: the table "
        f"grows by about {growth:.0%} (100/{target} − 1) and fewer rows fit in the cache. "
        "It applies to pages filled from now on; existing pages get the free space only when "
        "the table is rewritten (VACUUM FULL, CLUSTER or pg_repack — docs: ALTER TABLE … SET "
        "storage parameter)."
    )
    missing = thin_evidence(rel, u) or (horizon.HELD_BACK if horizon.held(ctx) else "")
    if missing:
        return _make(rel, u, "info", title, f"{detail} {missing}")
    rec = _fillfactor(ctx, rel, target, newpage, growth)
    return _make(rel, u, severity, title, detail, [rec])


def thin_evidence(rel: Relation, u: Updates) -> str:
    """What evidence a fillfactor rewrite still lacks, or "" when it has enough: counts over
    a known window (the interval between two snapshots, not since an unknown stats reset)
    that cover the table's rows at least MIN_PASSES times."""
    if u.window != "interval":
        return (
            "Held back: these counts run since the statistics were last reset, a window of "
            "unknown length that may hold one bulk UPDATE; advise with --interval over the "
            "usual workload to see the steady pattern."
        )
    rows = max(rel.n_live_tup or 0, 1)
    if u.updates < MIN_PASSES * rows:
        return (
            f"Held back: the interval's {u.updates:,} updates cover {u.updates / rows:.1f}× "
            f"its {rows:,} rows, under {MIN_PASSES:g}×: the first update of a row on a page "
            "packed full always leaves it. A longer --interval would tell the steady pattern."
        )
    return ""


def _fillfactor(
    ctx: Context, rel: Relation, target: int, newpage: float, growth: float
) -> Recommendation:
    return alter_table(
        rel,
        "fillfactor",
        str(target),
        toast=False,
        version=ctx.version,
        impact=round(min(1.0, 0.2 + 0.5 * newpage), 3),
        evidence=f"{newpage:.0%} of updates went to a new page (n_tup_newpage_upd)",
        reason=(
            f"free space on each page lets updated rows stay on their page (HOT); costs about "
            f"{growth:.0%} more table size, and existing pages need a rewrite to get it"
        ),
    )


def _indexed(rel: Relation, u: Updates) -> Finding:
    if u.newpage is None:
        why = (
            "The server (before PostgreSQL 16) does not report new-page updates, so a lack of "
            "room on the page is not ruled out; most often an indexed column changes."
        )
    elif u.newpage < NONE * u.updates:
        why = "Almost none went to another page: an indexed column changes in them."
    else:
        why = (
            f"{u.newpage / u.updates:.0%} of them went to another page, but none of those that "
            "stayed on theirs was HOT either: an indexed column changes in them."
        )
    detail = (
        f"{why} Such updates can never be HOT and add an entry to every index, so fillfactor "
        "will not help; only leaving the updated column out of the indexes would."
    )
    title = f"HOT share {u.hot_share:.0%}: updates change an indexed column"
    return _make(rel, u, "info", title, detail)


def _make(
    rel: Relation,
    u: Updates,
    severity: Severity,
    title: str,
    detail: str,
    recommendations: list[Recommendation] | None = None,
) -> Finding:
    evidence: dict[str, Value] = {
        "n_tup_upd": u.updates,
        "n_tup_hot_upd": u.hot,
        "n_tup_newpage_upd": u.newpage,
        "hot_share": round(u.hot_share, 4),
        "newpage_share": None if u.newpage_share is None else round(u.newpage_share, 4),
        "window": u.window,
        "fillfactor": rel.reloptions.get("fillfactor", "100"),
    }
    return Finding(
        question="hot",
        severity=severity,
        relation=label(rel),
        title=title,
        detail=detail,
        evidence=evidence,
        recommendations=recommendations or [],
    )


def _number(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
