"""TOAST: how much of each table lives out of line, and whether its TOAST relation is vacuumed
on the settings its owner meant for it.

Autovacuum visits a TOAST relation on its own, with its own statistics and thresholds, in a
second pass over pg_class (``do_autovacuum()`` in src/backend/postmaster/autovacuum.c). Its
settings are its own reloptions (``toast.*``) when it has any, and its table's when it has
none (``table_toast_map``; ``table_recheck_autovac()``) — the two are never merged. So a
table with its own autovacuum settings whose TOAST relation has even one option of its own
gives its TOAST relation none of them.
"""

from __future__ import annotations

from collections.abc import Mapping

from vacuumlab.advise.context import Context, alter_table, label
from vacuumlab.model.knobs import KNOBS
from vacuumlab.model.thresholds import Thresholds, options_of, parse_bool
from vacuumlab.records.advice import Finding, Recommendation, Severity, Value
from vacuumlab.records.snapshot import Relation, Table

#: Tables with less TOAST than this are left out: an empty TOAST relation still has an index.
MIN_TOAST_BYTES = 1 << 20
#: A table is TOAST-heavy when its TOAST relation holds at least this share of its bytes.
HEAVY_SHARE = 0.5
#: TOAST freeze age counts as much older than the heap's past this share of freeze_max_age.
OLDER_SHARE = 0.25
#: Fewer dead chunks than this are not worth a finding, past the threshold or not.
MIN_DEAD = 1000
#: Warn once the TOAST freeze age passes this share of its freeze_max_age.
WARN_AGE_SHARE = 0.75
_MB = 1 << 20


def findings(ctx: Context) -> list[Finding]:
    by_oid = ctx.thresholds_by_oid
    found: list[Finding] = []
    for table in ctx.tables():
        if table.toast is None:
            continue
        found.extend(_share(table))
        if table.toast.reloptions:  # without options of its own it reads its table's
            found.extend(_settings(ctx, table))
        toast_thresholds = by_oid.get(table.toast.oid)
        if toast_thresholds is not None:
            found.extend(_past_threshold(table, toast_thresholds, by_oid.get(table.heap.oid)))
        if toast_thresholds is not None:
            found.extend(_freeze_age(table, toast_thresholds))
    return found


# -- settings shared with the other questions ---------------------------------------------------


def autovacuum_options(table: Table, *, is_toast: bool) -> dict[str, str]:
    """The reloptions autovacuum reads for the heap or for its TOAST relation (the model's
    options_of())."""
    rel = table.toast if is_toast and table.toast is not None else table.heap
    return options_of(table, rel)


def inheritable(heap: Relation) -> dict[str, str]:
    """The table's options a TOAST relation without options of its own takes over: the
    autovacuum ones (AutoVacOpts in src/include/utils/rel.h), analyze aside — TOAST relations
    are never analysed."""
    return {
        name: value
        for name, value in heap.reloptions.items()
        if (name.startswith("autovacuum_") and not name.startswith("autovacuum_analyze_"))
        or name == "log_autovacuum_min_duration"
    }


def lost_options(table: Table) -> dict[str, str]:
    """The table's autovacuum options that do not reach its TOAST relation because the TOAST
    relation has options of its own and lacks these."""
    if table.toast is None or not table.toast.reloptions:
        return {}
    own = table.toast.reloptions
    return {k: v for k, v in inheritable(table.heap).items() if k not in own}


def carry_over(
    ctx: Context, table: Table, options: Mapping[str, str], *, owner: str
) -> list[Recommendation]:
    """``toast.*`` copies of table options, so the TOAST relation keeps them once it has
    options of its own. Switching autovacuum off is never recommended, and settings vacuumlab
    does not know are left to the detail."""
    found = []
    for name, value in sorted(options.items()):
        if not _carriable(ctx, name, value):
            continue
        found.append(
            alter_table(
                table.heap,
                name,
                value,
                toast=True,
                version=ctx.version,
                impact=0.3,
                reason=f"{owner} sets {name} = {value}, but a TOAST relation with options of "
                "its own does not read its table's (table_recheck_autovac in autovacuum.c): "
                "this keeps the TOAST relation on the table's setting",
            )
        )
    return found


def needs_carry_over(table: Table, *, is_toast: bool) -> dict[str, str]:
    """What giving a TOAST relation its first own option would take from it: everything it
    now inherits from its table."""
    if not is_toast or table.toast is None or table.toast.reloptions:
        return {}
    return inheritable(table.heap)


def _carriable(ctx: Context, name: str, value: str) -> bool:
    knob = KNOBS.get(name)
    if knob is None or "toast" not in knob.scopes or ctx.version < knob.since:
        return False
    return not (name == "autovacuum_enabled" and not parse_bool(value))


# -- findings -----------------------------------------------------------------------------------


def _share(table: Table) -> list[Finding]:
    heap = table.heap
    toast_bytes = heap.toast_bytes
    if toast_bytes is None or heap.heap_bytes is None or toast_bytes < MIN_TOAST_BYTES:
        return []
    total = heap.heap_bytes + (heap.index_bytes or 0) + toast_bytes
    share = toast_bytes / total
    if share < HEAVY_SHARE:
        return []
    return [
        Finding(
            question="toast",
            severity="info",
            relation=label(heap),
            title=f"TOAST holds {share:.0%} of the table's {total / _MB:,.1f} MB",
            detail=(
                "Most of this table is stored out of line. Its TOAST relation is vacuumed on its "
                "own thresholds and statistics, not the table's: deleting or updating a toasted "
                "value leaves all its chunks dead there, and the table's own vacuum does not "
                "count them (do_autovacuum in autovacuum.c)."
            ),
            evidence={
                "heap_bytes": heap.heap_bytes,
                "index_bytes": heap.index_bytes,
                "toast_bytes": toast_bytes,
                "toast_share": round(share, 4),
            },
        )
    ]


def _settings(ctx: Context, table: Table) -> list[Finding]:
    """A TOAST relation whose settings differ from its table's, and why."""
    assert table.toast is not None
    lost = lost_options(table)
    if lost:
        return [_lost_finding(ctx, table, lost)]
    own = table.toast.reloptions
    differing = {k: v for k, v in own.items() if table.heap.reloptions.get(k) != v}
    if not differing:
        return []
    text = ", ".join(f"{k} = {v}" for k, v in sorted(differing.items()))
    return [
        Finding(
            question="toast",
            severity="info",
            relation=label(table.toast, table.heap),
            title=f"TOAST has settings of its own: {text}",
            detail=(
                "These apply to the TOAST relation only; the table keeps its own. A TOAST "
                "relation with any option of its own reads none of its table's."
            ),
            evidence={f"toast.{k}": v for k, v in sorted(own.items())},
        )
    ]


def _lost_finding(ctx: Context, table: Table, lost: dict[str, str]) -> Finding:
    assert table.toast is not None
    owner = label(table.heap)
    recommendations = carry_over(ctx, table, lost, owner=owner)
    carried = {r.setting for r in recommendations}
    left = sorted(set(lost) - carried)
    detail = (
        f"{owner} has autovacuum settings ({_listing(lost)}), and its TOAST relation has "
        f"options of its own ({_listing(table.toast.reloptions)}). Autovacuum reads a TOAST "
        "relation's own options when it has any and its table's only when it has none — never "
        "a merge (table_recheck_autovac in autovacuum.c) — so the TOAST relation runs on the "
        "server's values for these."
    )
    if left:
        detail += f" Not recommended here, set by hand if meant: {', '.join(left)}."
    return Finding(
        question="toast",
        severity="warning",
        relation=label(table.toast, table.heap),
        title="the table's autovacuum settings do not reach its TOAST relation: "
        + ", ".join(sorted(lost)),
        detail=detail,
        evidence={
            **dict(sorted(table.heap.reloptions.items())),
            **{f"toast.{k}": v for k, v in sorted(table.toast.reloptions.items())},
        },
        recommendations=recommendations,
    )


def _past_threshold(table: Table, t: Thresholds, heap: Thresholds | None) -> list[Finding]:
    if t.dead <= t.vacuum or t.dead < MIN_DEAD:
        return []
    assert table.toast is not None
    heap_past = heap is not None and heap.needs_vacuum
    off = "" if t.effective.enabled else " Autovacuum is off for it: only a manual VACUUM helps."
    return [
        Finding(
            question="toast",
            severity="warning",
            relation=label(table.toast, table.heap),
            title=f"TOAST past its vacuum threshold: {t.dead:,} dead chunks, threshold "
            f"{t.vacuum:,.0f}",
            detail=(
                "Autovacuum takes a TOAST relation on its own thresholds, separately from its "
                "table"
                + ("" if heap_past else ", which is not past its own")
                + ". Each dead chunk is up to about 2 kB of a deleted or replaced value."
                + off
            ),
            evidence={
                "n_dead_tup": t.dead,
                "vacuum_threshold": round(t.vacuum, 1),
                "n_ins_since_vacuum": t.inserted,
                "insert_threshold": None if t.insert is None else round(t.insert, 1),
                "autovacuum_enabled": t.effective.enabled,
                "table_past_threshold": heap_past,
            },
        )
    ]


def _freeze_age(table: Table, t: Thresholds) -> list[Finding]:
    toast = table.toast
    assert toast is not None
    heap_age, toast_age = table.heap.frozenxid_age, toast.frozenxid_age
    if heap_age is None or toast_age is None:
        return []
    limit = t.effective.freeze.xid  # the same Min(reloption, GUC) as wraparound.py
    if toast_age - heap_age < OLDER_SHARE * limit:
        return []
    severity: Severity = "warning" if toast_age >= WARN_AGE_SHARE * limit else "info"
    evidence: dict[str, Value] = {
        "toast_frozenxid_age": toast_age,
        "heap_frozenxid_age": heap_age,
        "autovacuum_freeze_max_age": int(limit),
    }
    return [
        Finding(
            question="toast",
            severity=severity,
            relation=label(toast, table.heap),
            title=f"TOAST freeze age {toast_age:,} is {toast_age - heap_age:,} older than the "
            "table's",
            detail=(
                "Autovacuum freezes the TOAST relation only when it vacuums it, and a TOAST "
                "relation whose values are rarely replaced seldom reaches its thresholds: at "
                f"{limit:,.0f} it gets an anti-wraparound vacuum of its own. A manual "
                "VACUUM of the table processes its TOAST relation too; from PostgreSQL 16, "
                "VACUUM (PROCESS_MAIN FALSE) processes only the TOAST relation."
            ),
            evidence=evidence,
        )
    ]


def _listing(options: Mapping[str, str]) -> str:
    return ", ".join(f"{k} = {v}" for k, v in sorted(options.items()))
