"""The cost-driver report's charts: duration against dirty pages and index count, every
combination, who wrote the pages, and predicted against measured; drawn from the run's groups
and saved beside the page."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from matplotlib.figure import Figure

from vacuumlab.records.cost_driver_spec import PUBLISHED_COMPACT_50_BY_INDEXES
from vacuumlab.report.cost_driver import figures as cdc
from vacuumlab.report.cost_driver.data import CdObs, Combo, Data, dirty_pct, durations, lines
from vacuumlab.report.page import Chart, chart, median, stat

#: chart key -> (section title, PNG file).
CHARTS = {
    "dirty": ("Duration against dirty pages", "dirty.png"),
    "indexes": ("Duration against index count", "indexes.png"),
    "heatmap": ("Every combination at a glance", "heatmap.png"),
    "writers": ("Who wrote the pages", "writers.png"),
    "predicted": ("Predicted against measured", "predicted.png"),
}


def _dirty_figure(auto: Mapping[Combo, list[CdObs]]) -> Figure:
    points = []
    for (distribution, _, indexes), group in auto.items():
        for o in group:
            pct = dirty_pct(o)
            if pct is not None and o.duration is not None:
                points.append(cdc.DirtyPoint(distribution, indexes, pct, o.duration))
    return cdc.dirty_chart(points)


def _index_line(distribution: str, dead: int, observations: Sequence[CdObs]) -> cdc.IndexLine:
    counts = sorted({o.key[2] for o in observations})
    stats = [durations([o for o in observations if o.key[2] == k]) for k in counts]
    return cdc.IndexLine(
        distribution,
        dead,
        tuple(counts),
        tuple(median(s) for s in stats),
        tuple(None if s is None else s.q1 for s in stats),
        tuple(None if s is None else s.q3 for s in stats),
    )


def _index_figure(auto: Mapping[Combo, list[CdObs]]) -> Figure:
    found = [_index_line(d, dead, obs) for (d, dead), obs in lines(auto).items()]
    return cdc.index_chart(found, dict(enumerate(PUBLISHED_COMPACT_50_BY_INDEXES)))


def _heatmap_figure(auto: Mapping[Combo, list[CdObs]]) -> Figure:
    rows = list(lines(auto))
    columns = sorted({k for (_, _, k) in auto})
    grid = [[median(durations(auto.get((d, dead, k), []))) for k in columns] for d, dead in rows]
    return cdc.heatmap_chart([f"{d} {dead} %" for d, dead in rows], columns, grid)


def _writer_panel(distribution: str, auto: Mapping[Combo, list[CdObs]]) -> cdc.WriterPanel:
    dead = max(p for (d, p, _) in auto if d == distribution)
    groups = {k: g for (d, p, k), g in auto.items() if (d, p) == (distribution, dead)}
    pages = {
        metric: tuple(median(stat(g, metric)) for g in groups.values())
        for metric, _, _ in cdc.WRITERS
    }
    return cdc.WriterPanel(f"{distribution}, {dead} % dead", tuple(groups), pages)


def _writers_figure(auto: Mapping[Combo, list[CdObs]]) -> Figure:
    distributions = cdc.distribution_order(d for (d, _, _) in auto)
    return cdc.writers_chart([_writer_panel(d, auto) for d in distributions])


def _work_times(data: Data) -> dict[Combo, float]:
    """Median unthrottled (manual) duration by combination."""
    times = {c: median(durations(g)) for c, g in data.manual.items()}
    return {c: t for c, t in times.items() if t is not None}


def _prediction_pairs(data: Data) -> tuple[list[cdc.Pair], list[cdc.Pair], int]:
    work = _work_times(data)
    measured: list[cdc.Pair] = []
    delays: list[cdc.Pair] = []
    with_work = 0
    for combo, group in data.auto.items():
        for o in group:
            predicted, slept = o.get("predicted_delay_s"), o.get("delay_time_s")
            if predicted is None:
                continue
            if slept is not None:
                delays.append(cdc.Pair(combo[0], predicted, slept))
            if o.duration is not None:
                with_work += combo in work
                measured.append(cdc.Pair(combo[0], predicted + work.get(combo, 0.0), o.duration))
    return measured, delays, with_work


def _prediction_caption(pairs: int, with_work: int) -> str:
    if with_work == 0:
        base = (
            "No manual VACUUM of the same combination is recorded, so the work time is taken as "
            "0 and the prediction is the predicted sleep alone: points should sit a little above "
            "the line, by the time vacuum spends working rather than sleeping."
        )
    else:
        base = (
            f"For {with_work} of {pairs} runs the median duration of the manual, unthrottled "
            "VACUUM of the same combination is added as the work time; for the others it is 0."
        )
    return (
        "Left: predicted duration = predicted_delay_s (the cost model's sleep: cost accrued "
        f"÷ cost limit × cost delay) + work time, against the measured duration. {base} Right: "
        "the time actually spent asleep in the cost-based delay (delay_time_s) against "
        "predicted_delay_s. Points on the dashed y = x line mean the cost model explains the "
        "duration: the delay, not the work, sets the pace."
    )


_CAPTIONS = {
    "dirty": "Each marker is one autovacuum run. Look at whether the markers line up along "
    "the dirty-page share whatever their distribution: a spread DELETE dirties nearly every "
    "page at any dead share, so its runs stay at the right and take about as long at 10 % as at "
    "50 %, while compact runs climb with their dead share. Markers of one colour and shape "
    "stacked vertically are the index-count effect.",
    "indexes": "Median over the repetitions, with the interquartile range as error bars. "
    "Look at the slopes: each index adds a roughly constant time, fitted in the table below. "
    "Purple: the post's compact 50 % series (10 million rows) on its own right-hand axis, "
    "for the shape only.",
    "heatmap": "Median duration of every combination measured. Look down each column: the "
    "spread rows barely change with the dead share, the compact rows grow with it; along each "
    "row, durations grow with the index count. A dash marks a combination not measured.",
    "writers": "Median pages written, by whom, at the largest dead share of each distribution. "
    "Look at the red share: when the autovacuum worker writes its own dirty pages (a full "
    "ring of buffers), each write costs it time; with more indexes more of the writing falls "
    "to the worker. The stacks are medians of each writer, so they need not add up to the "
    "median total.",
}


def draw_charts(data: Data, out_dir: Path) -> list[Chart]:
    measured, delays, with_work = _prediction_pairs(data)
    drawn = {
        "dirty": _dirty_figure(data.auto),
        "indexes": _index_figure(data.auto),
        "heatmap": _heatmap_figure(data.auto),
        "writers": _writers_figure(data.auto),
        "predicted": cdc.prediction_chart(measured, delays),
    }
    captions = _CAPTIONS | {"predicted": _prediction_caption(len(measured), with_work)}
    return [chart(key, fig, CHARTS[key], captions[key], out_dir) for key, fig in drawn.items()]
