"""What a simulation's three outputs share: its title, the facts of its header, and one row
per relation, as plain strings (not escaped yet: each output escapes them its own way).
Pure: it reads the :class:`~vacuumlab.records.simulation.Simulation` record only."""

from __future__ import annotations

from vacuumlab.records.simulation import RelationForecast, Simulation
from vacuumlab.units import count, duration, rate

COLUMNS = (
    "relation",
    "dead/s",
    "inserts/s",
    "vacuums",
    "first start",
    "every",
    "duration",
    "peak dead",
    "waited past threshold",
)


def title(sim: Simulation) -> str:
    return f"Autovacuum over {sim.hours:g} h, simulated — {sim.server.database}"


def header(sim: Simulation) -> list[tuple[str, str]]:
    rows = [
        ("server", sim.server.version.split(" on ")[0]),
        ("from", f"{sim.taken_at:%Y-%m-%d %H:%M:%S %Z}, rates over {sim.interval_s:.0f} s"),
        (
            "launcher",
            f"a worker every {duration(sim.launch_every_s)} (naptime "
            f"{duration(sim.naptime_s)}), {sim.workers} worker slots, {sim.launches:,} launches",
        ),
        ("workers busy", f"{sim.busy_share:.0%} of the window"),
        ("what-ifs", ", ".join(sim.changes) or "none: the server as it is"),
    ]
    if sim.quiet:
        noun = "relation" if sim.quiet == 1 else "relations"
        rows.append(("left out", f"{sim.quiet:,} {noun} with no activity"))
    return rows


def row(r: RelationForecast) -> list[str]:
    return [
        r.relation,
        rate(r.dead_per_second),
        rate(r.inserts_per_second),
        f"{r.vacuums:,}" + (f" ({r.forced} forced)" if r.forced else ""),
        "—" if r.first_start_s is None else f"at {duration(r.first_start_s)}",
        "—" if r.mean_interval_s is None else duration(r.mean_interval_s),
        "—" if r.mean_duration_s is None else _short(r.mean_duration_s),
        count(r.peak_dead),
        "—" if not r.vacuums else f"{duration(r.waited_s / r.vacuums)} on average",
    ]


def _short(seconds: float) -> str:
    """Vacuums of small tables take milliseconds."""
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else duration(seconds)
