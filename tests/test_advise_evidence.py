"""Evidence before advice: a horizon holder counts only when it holds the same horizon in
both snapshots for longer than a vacuum cycle; dead tuples are blamed on it only when they
are older than it; one recommendation per setting."""

from __future__ import annotations

from datetime import datetime, timedelta

from helpers.advise import T0, context, relation, snapshot
from vacuumlab.advise import advise, horizon, once_per_setting, thresholds, without_moot
from vacuumlab.records.advice import Finding, Recommendation
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


def held_churn() -> tuple[Snapshot, Snapshot]:
    """A small table updated 20,000 times in 60 s while a session idle in a transaction has
    held the horizon for 10 minutes: pruning frees nothing, so 93 % of updates leave their
    page and every dead tuple stays (the long report and prepared transaction scenarios)."""
    vacuumed = T0 - timedelta(seconds=10)
    table = relation(1, "churn", reltuples=1000, relpages=100, n_live_tup=1000,
                     n_dead_tup=1000, n_tup_upd=0, n_tup_hot_upd=0, n_tup_newpage_upd=0,
                     last_autovacuum=vacuumed)  # fmt: skip
    first = snapshot(Table(heap=table, toast=None)).model_copy(
        update={"backends": [backend(1, 100, T0 - timedelta(minutes=10))]}
    )
    grown = table.model_copy(
        update={
            "n_dead_tup": 21_000,
            "n_tup_upd": 20_000,
            "n_tup_hot_upd": 1_400,
            "n_tup_newpage_upd": 18_600,
        }
    )
    return first, later(first, 60, tables=[Table(heap=grown, toast=None)])


def test_no_vacuum_speed_or_fillfactor_advice_while_the_horizon_is_held() -> None:
    """While a holder keeps every dead tuple, neither a faster vacuum (cost limits, a shorter
    naptime) nor free space on the page (fillfactor) helps: those findings say so at info and
    recommend nothing; the holder's timeout is the one change."""
    advice = advise(*held_churn())
    assert [r.setting for _, r in advice.recommendations()] == [IDLE]
    for question in ("hot", "timing", "workers"):
        found = [f for f in advice.findings if f.question == question]
        assert found
        assert {f.severity for f in found} == {"info"}, [f.title for f in found]
    [hot] = [f for f in advice.findings if f.question == "hot"]
    assert "horizon" in hot.detail


def test_a_long_query_gets_no_idle_timeout_but_says_what_ends_it() -> None:
    """A report query at work for 10 minutes: an idle-session timeout would never end it, so
    none is recommended; the finding names the backend and the lasting fixes instead."""
    report = backend(7, 100, T0 - timedelta(minutes=10)).model_copy(
        update={"state": "active", "query": "SELECT count(*) FROM orders"}
    )
    first = snapshot().model_copy(update={"backends": [report]})
    [found] = horizon_findings(first, later(first, 30))
    assert (found.severity, found.evidence["pid"]) == ("warning", 7)
    assert "long transaction" in found.title
    assert found.recommendations == []
    assert "statement_timeout" in found.detail


def _rec(setting: str, value: str, *, target: str | None = "public.q") -> Recommendation:
    scope = "server" if target is None else "table"
    return Recommendation(
        sql=f"-- {setting} = {value} on {target}",
        reason="r",
        scope=scope,
        setting=setting,
        value=value,
        target=target,
        impact=0.5,
    )


def _finding(*recs: Recommendation) -> Finding:
    return Finding(
        question="timing", severity="warning", relation="public.q", title="t", detail="d",
        recommendations=list(recs),
    )  # fmt: skip


def test_a_table_setting_is_recommended_once_whatever_value_each_finding_wants() -> None:
    """Two findings want the queue's cost limit, at 1,700 and 500: the first (most severe)
    keeps it; the other finding keeps its evidence."""
    first = _finding(_rec("autovacuum_vacuum_cost_limit", "1700"))
    second = _finding(_rec("autovacuum_vacuum_cost_limit", "500"))
    other = _finding(_rec("autovacuum_vacuum_cost_limit", "500", target="public.other"))
    kept = once_per_setting([first, second, other])
    assert [len(f.recommendations) for f in kept] == [1, 0, 1]


def test_no_cost_limit_where_the_advice_turns_the_delay_off() -> None:
    """With autovacuum_vacuum_cost_delay 0, vacuum_delay_point() never sleeps: a cost limit for
    the same table changes nothing. Another table's limit stays."""
    delay = _finding(_rec("autovacuum_vacuum_cost_delay", "0"))
    limit = _finding(
        _rec("autovacuum_vacuum_cost_limit", "1300"),
        _rec("autovacuum_vacuum_cost_limit", "800", target="public.other"),
    )
    kept = without_moot([limit, delay])
    assert [r.target for r in kept[0].recommendations] == ["public.other"]
    server = without_moot(
        [
            _finding(
                _rec("autovacuum_vacuum_cost_delay", "0ms", target=None),
                _rec("autovacuum_vacuum_cost_limit", "400", target=None),
            )
        ]
    )
    assert [r.setting for r in server[0].recommendations] == ["autovacuum_vacuum_cost_delay"]
