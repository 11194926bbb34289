"""The toast report's charts: sizes, timings and the work behind them beside the published
figures, and the parallel experiment's lock timeline; drawn from the run and saved beside the
page."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from matplotlib.figure import Figure

from vacuumlab.records.toast_spec import (
    DEFAULT_TOAST_TUPLE_TARGET,
    PUBLISHED,
    rel_metric,
    vacuum_metric,
)
from vacuumlab.report.page import Chart, chart, median, stat
from vacuumlab.report.toast import figures
from vacuumlab.report.toast.data import STEP_METRICS, Data, Rep, Variant, label
from vacuumlab.report.toast.formats import MB
from vacuumlab.report.toast.timeline import ARM_TITLES, ROLE_NAMES, Timeline

CHARTS = {
    "sizes": ("Sizes: heap and TOAST", "sizes.png"),
    "timings": ("Timings beside the post's", "timings.png"),
    "work": ("The work behind the timings", "work.png"),
    "timeline": ("Lock timeline of the parallel experiment", "timeline.png"),
}


def _timeline_figure(timelines: Mapping[str, Timeline]) -> Figure:
    arms = []
    for arm, timeline in timelines.items():
        sessions = tuple(r for r in ("table", "toast") if r in timeline.extents)
        bars = tuple(
            figures.Bar(ROLE_NAMES.get(s.session, s.session), s.start, s.end, s.category)
            for s in timeline.spans
        )
        arms.append(
            figures.ArmTimeline(
                title=ARM_TITLES[arm],
                sessions=tuple(ROLE_NAMES[r] for r in sessions),
                extents={ROLE_NAMES.get(r, r): e for r, e in timeline.extents.items()},
                bars=bars,
                marks=tuple(_marks(timeline)),
            )
        )
    return figures.timeline_chart(arms)


def _marks(timeline: Timeline) -> list[figures.Mark]:
    kinds = (
        ("stopping truncate", "skipped"),
        ("suspending truncate", "suspended"),
        (": truncated ", "truncated"),
    )
    marks = []
    for role, t, notice in timeline.notices:
        kind = next((k for needle, k in kinds if needle in notice), None)
        if kind is not None:
            marks.append(figures.Mark(ROLE_NAMES.get(role, role), t, kind))
    return marks


def _mb(value: float | None) -> float | None:
    return None if value is None else value / MB


def _size_bars(storage: Mapping[Variant, list[Rep]]) -> list[figures.SizeBar]:
    def median_mb(group: Sequence[Rep], part: str, stage: str) -> float | None:
        return _mb(median(stat(group, rel_metric(part, "bytes", stage))))

    return [
        figures.SizeBar(
            label(v),
            median_mb(g, "heap", "loaded"),
            median_mb(g, "toast", "loaded"),
            median_mb(g, "heap", "updated"),
            median_mb(g, "toast", "updated"),
        )
        for v, g in storage.items()
    ]


def _published_bars() -> list[figures.SizeBar]:
    keys = ("heap_mb_loaded", "toast_mb_loaded", "heap_mb_updated", "toast_mb_updated")
    return [
        figures.SizeBar(storage, *(float(getattr(PUBLISHED[k], storage)) for k in keys))
        for storage in ("extended", "main")
    ]


def _timing_bars(storage: Mapping[Variant, list[Rep]]) -> list[figures.TimingBars]:
    bars = []
    for (name, target), group in storage.items():
        same = sorted(t for s, t in storage if s == name)
        rank = 0 if target == DEFAULT_TOAST_TUPLE_TARGET else 1 + same.index(target)
        values = tuple(median(stat(group, m)) for m in STEP_METRICS)
        bars.append(figures.TimingBars(label((name, target)), name, rank, values))
    return bars


def _published_timings() -> dict[str, tuple[float, float, float]]:
    keys = ("update_s", "vacuum_s", "freeze_s")
    return {
        storage: (
            getattr(PUBLISHED[keys[0]], storage),
            getattr(PUBLISHED[keys[1]], storage),
            getattr(PUBLISHED[keys[2]], storage),
        )
        for storage in ("extended", "main")
    }


def _work_bars(storage: Mapping[Variant, list[Rep]]) -> list[figures.WorkBars]:
    return [
        figures.WorkBars(
            label(v),
            _mb(median(stat(g, "update_wal_bytes"))),
            median(stat(g, vacuum_metric("vacuum", "heap", "pages_scanned"))),
            median(stat(g, vacuum_metric("vacuum", "toast", "pages_scanned"))),
        )
        for v, g in storage.items()
    ]


_CAPTIONS = {
    "sizes": "Each table loaded (left bar) and after the UPDATE of its narrow column (right "
    "bar, hatched): heap in blue, TOAST in orange, medians of the repetitions. Look at where "
    "the bytes are: out of line, the heap is a thin list of pointers and the UPDATE doubles "
    "only that; in line, the heap is the whole table and the UPDATE doubles all of it. The "
    "post's figures, for 500,000 rows, are on the right.",
    "timings": "Median seconds of each step, on a log scale; the post's published seconds on "
    "the right. Compare the ratios between storages, not the seconds: the row count, the "
    "machine and the cache differ.",
    "work": "What the timings are made of: the WAL the UPDATE wrote (every new row version, "
    "and a full-page image for the first change of each page after the checkpoint) and the "
    "pages the VACUUM read, heap and TOAST.",
    "timeline": "Each row is one session, from its VACUUM's start to its end (outline), "
    "coloured by what pg_stat_activity, pg_stat_progress_vacuum and pg_locks showed when "
    "sampled: vacuuming, truncating, retrying the truncation lock, waiting for a lock (red). "
    "Triangles mark truncations. First repetition of each arm.",
}


def draw_charts(data: Data, timelines: Mapping[str, Timeline], out_dir: Path) -> dict[str, Chart]:
    drawn = {
        "sizes": figures.sizes_chart(_size_bars(data.storage), _published_bars()),
        "timings": figures.timings_chart(_timing_bars(data.storage), _published_timings()),
        "work": figures.work_chart(_work_bars(data.storage)),
        "timeline": _timeline_figure(timelines),
    }
    return {
        key: chart(key, fig, CHARTS[key], _CAPTIONS[key], out_dir) for key, fig in drawn.items()
    }
