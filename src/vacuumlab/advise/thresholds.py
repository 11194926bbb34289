"""Thresholds: where each relation stands against its autovacuum thresholds, which are past
them and still waiting, and why (autovacuum off, every worker busy, the xmin horizon).

Queue-like tables (rows inserted and deleted many times over their live size) get the settings
the churn study supports, with its measurement.
"""

from __future__ import annotations

from vacuumlab.advise import horizon, partitions
from vacuumlab.advise import toast as toast_options
from vacuumlab.advise.context import Context, alter_system, alter_table, label
from vacuumlab.model import balance
from vacuumlab.model.thresholds import Thresholds, parse_bool, with_rows
from vacuumlab.records.advice import Finding, Recommendation
from vacuumlab.records.snapshot import Relation, Table
from vacuumlab.units import share_of

#: A table is queue-like when its rows turned over at least this many times (inserts plus
#: deletes over live rows): the shape the churn study measures.
QUEUE_TURNOVER = 10.0
#: Below this many dead tuples a table past its threshold is not worth a finding.
MIN_DEAD = 1000
CHURN_EVIDENCE = (
    "churn study (vacuumlab run churn, demo preset, 2 cores): with cost_delay 0 and a short "
    "naptime, mean latency fell from 2.35 to 1.71 ms, stddev from 1.51 to 0.65 ms and the "
    "dead-tuple peak from 214,718 to 86,662 against the defaults"
)


def findings(ctx: Context) -> list[Finding]:
    names = ctx.names
    found: list[Finding] = []
    # One relation in thousands gives a finding: each test returns None rather than a list,
    # so the rest cost no list built and extended.
    for t in ctx.thresholds:
        name = names[t.relation.oid]
        waiting = _waiting(ctx, t, name)
        if waiting is not None:
            found.append(waiting)
        if not t.is_toast:
            if (queue := _queue(ctx, t, name)) is not None:
                found.append(queue)
            # A table never counted has its analyze told in its waiting finding.
            if (waiting is None or not _never_counted(t)) and (
                analyze := _analyze(ctx, t, name)
            ) is not None:
                found.append(analyze)
    found.extend(partitions.findings(ctx))
    found.extend(_global_off(ctx))
    return found


def _waiting(ctx: Context, t: Thresholds, name: str) -> Finding | None:
    """A relation past its vacuum threshold: say how far, and what keeps autovacuum away."""
    if not t.past_threshold or max(t.dead, t.inserted) < MIN_DEAD:
        return None
    reason, severity, recommendations = _why(ctx, t, name)
    if _never_counted(t):
        return Finding(
            question="thresholds",
            severity=severity,
            relation=name,
            title=f"never vacuumed or analyzed, so its thresholds count 0 rows: {reason}",
            detail=_never_counted_detail(ctx, t),
            evidence=_evidence(t) | {"n_live_tup": t.relation.n_live_tup},
            recommendations=recommendations,
        )
    return Finding(
        question="thresholds",
        severity=severity,
        relation=name,
        title=f"{_standing(t)}: {reason}",
        detail=(
            f"{t.dead:,} dead tuples against a threshold of {t.vacuum:,.0f} "
            f"({_formula(t)}); {t.inserted:,} inserted since the last vacuum"
            + (f" against {t.insert:,.0f}" if t.insert is not None else "")
            + "."
        ),
        evidence=_evidence(t),
        recommendations=recommendations,
    )


def _standing(t: Thresholds) -> str:
    """How far past its threshold: the dead tuples against the vacuum threshold, or, where
    the inserts are further past theirs (an insert-mostly table: the insert threshold sets
    it going, 13+), the inserts against the insert threshold."""
    by_inserts = t.insert_progress
    if by_inserts is not None and by_inserts > t.vacuum_progress and t.inserted > (t.insert or 0):
        return share_of(by_inserts, "its insert threshold")
    return share_of(t.vacuum_progress, "its vacuum threshold")


def _never_counted(t: Thresholds) -> bool:
    """reltuples -1 (14+): no vacuum or analyze has counted the rows yet."""
    return t.relation.reltuples < 0


def _never_counted_detail(ctx: Context, t: Thresholds) -> str:
    """What its thresholds are while reltuples is -1 (autovacuum takes it as 0 rows,
    relation_needs_vacanalyze()), and what they become once its live rows are counted."""
    now = [f"{t.dead:,} dead tuples against {t.vacuum:,.0f}"]
    if t.insert is not None:
        now.append(f"{t.inserted:,} inserted against {t.insert:,.0f}")
    if t.analyze is not None:
        now.append(f"{t.modified:,} changed against {t.analyze:,.0f} for an analyze")
    live = t.relation.n_live_tup
    text = (
        "reltuples is -1: no vacuum or analyze has counted its rows yet, and autovacuum takes "
        "that as 0 rows, so every threshold is its base alone (" + "; ".join(now) + ")."
    )
    if t.effective.active and t.effective.table_enabled:
        text += " autovacuum takes it at its next visit."
    if live:
        counted = with_rows(t, float(live))
        text += (
            f" Once its {live:,} live rows are counted, they become "
            + ", ".join(f"{value:,.0f} {what}" for what, value in counted)
            + "."
        )
    return text


def _analyze(ctx: Context, t: Thresholds, name: str) -> Finding | None:
    """Past the analyze threshold: autovacuum analyses it at its next visit (doanalyze in
    relation_needs_vacanalyze())."""
    if not t.needs_analyze or t.modified < MIN_DEAD or t.analyze is None:
        return None
    never = t.relation.reltuples < 0
    if never:
        return Finding(
            question="thresholds",
            severity="info",
            relation=name,
            title="never analyzed: an autoanalyze is due",
            detail="Until it runs, the planner works from no statistics. "
            + _never_counted_detail(ctx, t),
            evidence={"n_mod_since_analyze": t.modified, "analyze_threshold": t.analyze},
        )
    return Finding(
        question="thresholds",
        severity="info",
        relation=name,
        title=f"{share_of(t.modified / max(t.analyze, 1), 'its analyze threshold')}: "
        "an autoanalyze is due",
        detail=(
            f"{t.modified:,} rows changed since the last analyze against a threshold of "
            f"{t.analyze:,.0f}. Until it runs, the planner works from the previous statistics."
        ),
        evidence={"n_mod_since_analyze": t.modified, "analyze_threshold": t.analyze},
    )


def _why(ctx: Context, t: Thresholds, name: str) -> tuple[str, str, list[Recommendation]]:
    """Why a relation past its threshold has not been vacuumed (yet)."""
    if t.in_recovery:
        return "a standby runs no autovacuum: the primary's vacuums reach it by WAL", "info", []
    if not t.effective.table_enabled:
        return _table_off(ctx, t, name)
    if not t.effective.active:
        forced = _forced_clause(ctx, t)
        return "autovacuum is off for the whole server" + forced, _off_severity(ctx, t), []
    if balance.busy_workers(ctx.now.workers, ctx.now.vacuums) >= ctx.workers:
        # One server finding warns of it and says what to change (workers.py); one warning
        # per waiting table would bury it.
        return "every autovacuum worker is busy (see Cost budget and workers)", "info", []
    if t.dead > 0 and _vacuumed_recently(ctx, t):
        return _held_back(ctx, t)
    return "waiting for the launcher (it visits each database every naptime)", "info", []


def _table_off(ctx: Context, t: Thresholds, name: str) -> tuple[str, str, list[Recommendation]]:
    """Autovacuum off for the relation: its dead tuples wait, except for the forced vacuum a
    freeze limit brings (relation_needs_vacanalyze() ignores the switch then)."""
    table = _heap_of(ctx, t)
    until = "until its wraparound vacuum" if t.forced else "except by a manual VACUUM"
    fix = alter_table(
        table,
        "autovacuum_enabled",
        "on",
        toast=t.is_toast,
        version=ctx.version,
        reason=f"autovacuum is off for {name}: its dead tuples stay {until}",
        impact=min(1.0, 0.5 + t.vacuum_progress / 20),
    )
    carried = toast_options.needs_carry_over(_table_of(ctx, t), is_toast=t.is_toast)
    carried.pop("autovacuum_enabled", None)
    extra = toast_options.carry_over(ctx, _table_of(ctx, t), carried, owner=label(table))
    clause = _forced_clause(ctx, t)
    return "autovacuum is off for it" + clause, _off_severity(ctx, t), [fix, *extra]


def _forced_clause(ctx: Context, t: Thresholds) -> str:
    if t.forced is None:
        return ""
    if t.effective.active:
        return f", but it is past its {t.forced} freeze limit: a wraparound vacuum takes it anyway"
    off = ctx.autovacuum_off
    if ctx.emergency:
        return (
            f", but it is past its {t.forced} freeze limit and the database past the server's: "
            f"with {off} off the postmaster still starts emergency workers, which take it"
        )
    return (
        f"; it is past its {t.forced} freeze limit, but with {off} off no launcher runs: the "
        "postmaster starts an emergency worker only once the database's own age passes the "
        "server's freeze_max_age (autovacuum_freeze_max_age, or the multixact one), not its "
        "table's, and nothing vacuums it before then"
    )


def _off_severity(ctx: Context, t: Thresholds) -> str:
    """A forced vacuum that will come is a warning; none coming, critical."""
    return "warning" if t.forced and (t.effective.active or ctx.emergency) else "critical"


def _table_of(ctx: Context, t: Thresholds) -> Table:
    return ctx.tables_by_oid[t.relation.oid]


def _held_back(ctx: Context, t: Thresholds) -> tuple[str, str, list[Recommendation]]:
    """Dead tuples are the horizon's only when they are older than its holder: the holder
    began before the table's last vacuum, so that vacuum had to keep them. Dead tuples made
    since that vacuum are only new, and wait for the next one."""
    since = horizon.oldest_holder(ctx)
    last = t.relation.last_autovacuum
    if since is not None and last is not None and since < last:
        return "vacuumed recently, but the xmin horizon keeps its dead tuples", "warning", []
    if ctx.later is None:
        why = "vacuumed recently: whether its dead tuples are new or kept by the xmin horizon "
        return why + "takes two snapshots (--interval)", "info", []
    return "vacuumed recently: its dead tuples came since, and wait for the next one", "info", []


def _vacuumed_recently(ctx: Context, t: Thresholds) -> bool:
    last = t.relation.last_autovacuum
    naptime = ctx.setting("autovacuum_naptime", 60)
    return last is not None and (ctx.now.taken_at - last).total_seconds() < 3 * naptime


def _heap_of(ctx: Context, t: Thresholds) -> Relation:
    return ctx.tables_by_oid[t.relation.oid].heap


def _formula(t: Thresholds) -> str:
    e = t.effective
    text = (
        f"{e.vacuum_threshold:g} + {e.vacuum_scale_factor:g} × {max(t.relation.reltuples, 0):,.0f}"
    )
    if e.vacuum_max_threshold is not None and t.vacuum >= e.vacuum_max_threshold:
        text += f", capped at {e.vacuum_max_threshold:,.0f}"
    return text


def _evidence(t: Thresholds) -> dict[str, float | int | str | bool | None]:
    return {
        "n_dead_tup": t.dead,
        "vacuum_threshold": round(t.vacuum, 1),
        "n_ins_since_vacuum": t.inserted,
        "insert_threshold": None if t.insert is None else round(t.insert, 1),
        "reltuples": t.relation.reltuples,
        "autovacuum_enabled": t.effective.enabled,
        "overridden": ", ".join(sorted(t.effective.overridden)) or None,
        "last_autovacuum": None
        if t.relation.last_autovacuum is None
        else t.relation.last_autovacuum.isoformat(),
    }


def _queue(ctx: Context, t: Thresholds, name: str) -> Finding | None:
    """Queue-like tables: rows come and go many times over their live size."""
    rel = t.relation
    live = max(rel.n_live_tup or 0, 1)
    turnover = ((rel.n_tup_ins or 0) + (rel.n_tup_del or 0)) / live
    if turnover < QUEUE_TURNOVER or (rel.n_tup_del or 0) < MIN_DEAD:
        return None
    recommendations = _queue_settings(ctx, t)
    return Finding(
        question="thresholds",
        severity="warning" if recommendations else "info",
        relation=name,
        title=f"queue-like: rows turned over {turnover:,.0f} times",
        detail=(
            f"{rel.n_tup_ins or 0:,} inserts and {rel.n_tup_del or 0:,} deletes against "
            f"{rel.n_live_tup or 0:,} live rows. Latency in such tables follows the dead "
            "tuples: vacuum them early and unthrottled. autovacuum_naptime is server-wide; "
            "the churn study's best step also lowered it to 10s."
        ),
        evidence={
            "turnover": round(turnover, 1),
            "n_tup_ins": rel.n_tup_ins,
            "n_tup_del": rel.n_tup_del,
            "n_live_tup": rel.n_live_tup,
        },
        recommendations=recommendations,
    )


def _queue_settings(ctx: Context, t: Thresholds) -> list[Recommendation]:
    """The churn study's settings for a queue, where the table has none of its own."""
    rel = t.relation
    recommendations = []
    if "autovacuum_vacuum_cost_delay" not in rel.reloptions:
        recommendations.append(
            alter_table(
                rel,
                "autovacuum_vacuum_cost_delay",
                "0",
                toast=False,
                version=ctx.version,
                impact=0.6,
                evidence=CHURN_EVIDENCE,
                reason="a queue's vacuum is small and frequent: unthrottled it finishes before the "
                "queue refills, and a table with its own cost settings leaves the shared budget "
                "to the others (autovac_balance_cost in autovacuum.c)",
            )
        )
    if (
        t.effective.vacuum_scale_factor > 0.01
        and "autovacuum_vacuum_scale_factor" not in rel.reloptions
        and rel.reltuples >= 0  # never analysed (-1): the factor multiplies nothing yet
    ):
        recommendations.append(
            alter_table(
                rel,
                "autovacuum_vacuum_scale_factor",
                "0.01",
                toast=False,
                version=ctx.version,
                impact=0.5,
                evidence=CHURN_EVIDENCE,
                reason=f"with {t.effective.vacuum_scale_factor:g} × reltuples the queue waits for "
                f"{t.vacuum:,.0f} dead tuples; a queue's latency climbs with its dead tuples",
            )
        )
    return recommendations


#: Server switches that stop autovacuum's threshold-driven work (AutoVacuumingActive()).
_SWITCHES = {
    "autovacuum": "autovacuum is off for the whole server",
    "track_counts": "track_counts is off: autovacuum has no statistics to act on",
}


def _global_off(ctx: Context) -> list[Finding]:
    if ctx.now.server.in_recovery:
        return []
    return [
        _switch_off(ctx, name, title)
        for name, title in _SWITCHES.items()
        if not parse_bool(ctx.settings.get(name, "on"))
    ]


def _switch_off(ctx: Context, setting: str, title: str) -> Finding:
    fix = alter_system(
        setting,
        "on",
        version=ctx.version,
        impact=1.0,
        reason=f"with {setting} off no launcher runs (AutoVacuumingActive() in autovacuum.c): "
        "dead tuples pile up in every table, and only emergency anti-wraparound vacuums come",
    )
    return Finding(
        question="thresholds",
        severity="critical",
        relation=None,
        title=title,
        detail="No table is vacuumed or analysed for its dead tuples and changes, whatever its "
        "thresholds. No launcher runs: the postmaster starts an emergency worker only once the "
        "cluster's oldest datfrozenxid (or datminmxid) age passes the server's "
        "autovacuum_freeze_max_age (or autovacuum_multixact_freeze_max_age), and sends it to "
        "the database most at risk, where it vacuums the tables past their freeze limits; a "
        "table's own lower freeze_max_age brings none sooner.",
        recommendations=[fix],
    )
