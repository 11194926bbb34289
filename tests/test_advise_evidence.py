"""Evidence before advice: a horizon holder counts only when it holds the same horizon in
both snapshots for longer than a vacuum cycle; dead tuples are blamed on it only when they
are older than it; one recommendation per setting."""

from __future__ import annotations

from datetime import datetime, timedelta

from advise_fixtures import T0, context, relation, snapshot
from vacuumlab.advise import advise, horizon, thresholds
from vacuumlab.records.advice import Finding
from vacuumlab.records.snapshot import Backend, PreparedXact, Snapshot, Table

IDLE = "idle_in_transaction_session_timeout"
NAPTIME = 60.0


def backend(pid: int, xmin: int, started: datetime) -> Backend:
    return Backend(
        pid=pid,
        backend_type="client backend",
        database="app",
        user_name="app",
        application_name="pgbench",
        state="idle in transaction",
        backend_xid=None,
        backend_xmin=xmin,
        xmin_age=5,
        xact_start=started,
        query_start=started,
        state_change=started,
        wait_event="ClientRead",
        query="UPDATE pgbench_accounts ...",
    )


def later(first: Snapshot, seconds: float, **fields: object) -> Snapshot:
    return first.model_copy(update={"taken_at": T0 + timedelta(seconds=seconds), **fields})


def horizon_findings(first: Snapshot, second: Snapshot | None = None) -> list[Finding]:
    return horizon.findings(context(first, second))


def test_a_client_between_two_statements_is_no_holder() -> None:
    """pgbench sessions "idle in transaction for 0 s" at both snapshots, each time in another
    transaction: no finding, no timeout."""
    first = snapshot().model_copy(update={"backends": [backend(1, 100, T0), backend(2, 101, T0)]})
    moved = [backend(1, 900, T0 + timedelta(seconds=40)), backend(2, 901, T0)]
    assert horizon_findings(first, later(first, 40, backends=moved)) == []


def test_one_snapshot_is_never_enough_for_a_warning() -> None:
    hours = snapshot().model_copy(update={"backends": [backend(1, 100, T0 - timedelta(hours=2))]})
    [found] = horizon_findings(hours)
    assert (found.severity, found.recommendations) == ("info", [])
    assert "advise with --interval" in found.detail


def test_held_across_the_interval_but_shorter_than_a_cycle() -> None:
    first = snapshot().model_copy(update={"backends": [backend(1, 100, T0 - timedelta(seconds=5))]})
    [found] = horizon_findings(first, later(first, 30))
    assert (found.severity, found.recommendations) == ("info", [])
    assert "not yet a vacuum cycle" in found.detail


def test_held_across_the_interval_for_longer_than_a_cycle() -> None:
    dirty = Table(heap=relation(1, "t", n_dead_tup=5000), toast=None)
    first = snapshot(dirty).model_copy(
        update={"backends": [backend(1, 100, T0 - timedelta(seconds=NAPTIME))]}
    )
    [found] = horizon_findings(first, later(first, 30))
    assert found.severity == "warning"
    assert [r.setting for r in found.recommendations] == [IDLE]
    assert found.evidence["same_horizon_in_both_snapshots"] is True


def test_prepared_transaction_needs_both_snapshots() -> None:
    p = PreparedXact(gid="g", xid=100, xid_age=5, prepared=T0 - timedelta(minutes=10), owner="a",
                     database="app")  # fmt: skip
    first = snapshot().model_copy(update={"prepared": [p]})
    [alone] = horizon_findings(first)
    assert alone.severity == "info"
    [held] = horizon_findings(first, later(first, 30))
    assert held.severity == "warning"
    fresh = p.model_copy(update={"gid": "other"})
    assert horizon_findings(first, later(first, 30, prepared=[fresh])) == []


def test_one_recommendation_per_setting() -> None:
    dirty = Table(heap=relation(1, "t", n_dead_tup=5000), toast=None)
    old = T0 - timedelta(minutes=10)
    first = snapshot(dirty).model_copy(
        update={"backends": [backend(1, 100, old), backend(2, 101, old)]}
    )
    advice = advise(first, later(first, 30))
    timeouts = [r for f in advice.findings for r in f.recommendations if r.setting == IDLE]
    assert len(timeouts) == 1
    assert len([f for f in advice.findings if f.question == "horizon"]) == 2


def blamed(dead: int, vacuumed: datetime, holder_since: datetime) -> list[str]:
    """Thresholds' titles for a table past its threshold, vacuumed at ``vacuumed``, with an
    idle session holding since ``holder_since`` across a 30 s interval."""
    table = relation(1, "t", reltuples=1000, n_dead_tup=dead, n_ins_since_vacuum=5000,
                     last_autovacuum=vacuumed)  # fmt: skip
    first = snapshot(Table(heap=table, toast=None)).model_copy(
        update={"backends": [backend(1, 100, holder_since)]}
    )
    return [f.title for f in thresholds.findings(context(first, later(first, 30)))]


def test_dead_tuples_blamed_on_the_horizon_only_when_older_than_the_holder() -> None:
    holder_since = T0 - timedelta(minutes=10)
    vacuumed_since = T0 - timedelta(seconds=20)
    [held] = blamed(5000, vacuumed_since, holder_since)
    assert "xmin horizon keeps its dead tuples" in held
    # The vacuum ran before the holder began: the dead tuples came since, they are only new.
    [fresh] = blamed(5000, holder_since - timedelta(seconds=1), T0 - timedelta(seconds=70))
    assert "xmin horizon" not in fresh
    # No dead tuples at all (an insert-only table past its insert threshold): nothing held.
    [inserted] = blamed(0, vacuumed_since, holder_since)
    assert "xmin horizon" not in inserted


def test_no_scale_factor_advice_while_reltuples_is_unknown() -> None:
    """A queue-like, bloated table never analysed (reltuples -1): a scale factor multiplies
    nothing yet, so neither the queue nor the bloat question recommends one."""
    queue = relation(1, "queue", reltuples=-1.0, relpages=5000, n_live_tup=1000,
                     n_dead_tup=40_000, n_tup_ins=41_000, n_tup_del=40_000)  # fmt: skip
    advice = advise(snapshot(Table(heap=queue, toast=None)))
    scaled = [r.sql for f in advice.findings for r in f.recommendations if "scale" in r.setting]
    assert scaled == []
    assert any("queue-like" in f.title for f in advice.findings)


def test_one_snapshot_blames_no_horizon_and_says_what_is_missing() -> None:
    table = relation(1, "t", reltuples=1000, n_dead_tup=5000,
                     last_autovacuum=T0 - timedelta(seconds=20))  # fmt: skip
    first = snapshot(Table(heap=table, toast=None)).model_copy(
        update={"backends": [backend(1, 100, T0 - timedelta(hours=1))]}
    )
    [found] = thresholds.findings(context(first))
    assert found.severity == "info"
    assert found.title.endswith("takes two snapshots (--interval)")
