"""Parse PostgreSQL's report of one vacuum: the autovacuum server log entry or VACUUM VERBOSE.

Both come from heap_vacuum_rel() in src/backend/access/heap/vacuumlazy.c and share one body,
one fact per line. Only the first line differs: ``automatic [aggressive ]vacuum [to prevent
wraparound ]of table "db.schema.table": index scans: N`` in the log (continuation lines start
with a TAB there), ``finished vacuuming "db.schema.table": index scans: N`` in the VERBOSE
notice (PostgreSQL 15+; older VERBOSE output has another shape and is not parsed).

The body changed between versions (13: no index lines; 13-14: "skipped due to pins" instead of
"scanned"; 16: "frozen:"; 18: "eagerly scanned", "visibility map:", "delay time:" and "reads"
where 17 and older say "misses"), so every field has its own pattern and a line that is absent
leaves its fields None. Messages must be in English (lc_messages C or en).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from typing import Final

from vacuumlab.errors import VacuumlabError

_HEADER: Final = re.compile(
    r"(?P<kind>finished vacuuming|automatic (?P<aggressive>aggressive )?vacuum "
    r"(?P<wraparound>to prevent wraparound )?of table)"
    r' "(?P<relation>.+?)": index scans: (?P<scans>\d+)'
)
#: The stderr log's %m (or %t) timestamp with its zone: "2026-11-21 20:39:47.472 UTC".
_TIMESTAMP: Final = re.compile(
    r"(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)?)(?: ([A-Za-z]+|[+-]\d{2}(?::?\d{2})?))?"
)
_UTC_NAMES: Final = frozenset({"UTC", "GMT", "Z"})


def _line(pattern: str) -> re.Pattern[str]:
    """A pattern anchored at the start of a body line, after the log's TAB if there is one."""
    return re.compile(r"^[\t ]*" + pattern, re.MULTILINE)


_PAGES: Final = _line(r"pages: (\d+) removed, (\d+) remain(?:, (\d+) scanned)?")
_TUPLES: Final = _line(r"tuples: (\d+) removed, (\d+) remain, (\d+) are dead but not yet removable")
_FROZEN: Final = _line(r"frozen: (\d+) pages from table \([^)]*\) had (\d+) tuples frozen")
_VM: Final = _line(r"visibility map: (\d+) pages set all-visible, (\d+) pages set all-frozen")
_INDEX: Final = _line(
    r'index "(.+?)": pages: (\d+) in total, (\d+) newly deleted, (\d+) currently deleted, '
    r"(\d+) reusable"
)
_DELAY: Final = _line(r"delay time: ([\d.]+) ms")
_IO: Final = _line(r"I/O timings: read: ([\d.]+) ms, write: ([\d.]+) ms")
# 14-era source printed "I/O Timings: read=X write=Y", each part only when non-zero.
_IO_OLD: Final = _line(r"I/O Timings:(?: read=([\d.]+))?(?: write=([\d.]+))?[ \t]*$")
_BUFFERS: Final = _line(r"buffer usage: (\d+) hits, (\d+) (?:reads|misses), (\d+) dirtied")
_WAL: Final = _line(r"WAL usage: (\d+) records, (\d+) full page images, (\d+) bytes")
_ELAPSED: Final = _line(r"system usage: CPU: .*elapsed: ([\d.]+) s")
_CPU: Final = _line(r"system usage: CPU: user: ([\d.]+) s, system: ([\d.]+) s")


@dataclass(frozen=True, slots=True)
class IndexReport:
    """One ``index "name": pages: ...`` line (14+)."""

    name: str
    pages_total: int
    newly_deleted: int
    currently_deleted: int
    reusable: int


@dataclass(frozen=True, slots=True)
class VacuumReport:
    """What one vacuum of one table reported; None where the server did not print the line.

    ``aggressive`` comes from the log's first line; VERBOSE states it only in the separate
    "aggressively vacuuming" notice, so it is False unless that notice is part of the text.
    """

    relation: str
    automatic: bool
    aggressive: bool
    at: datetime | None
    index_scans: int | None
    pages_removed: int | None
    pages_remain: int | None
    pages_scanned: int | None
    tuples_removed: int | None
    tuples_remain: int | None
    tuples_dead_not_removable: int | None
    frozen_pages: int | None
    vm_all_visible: int | None
    vm_all_frozen: int | None
    indexes: tuple[IndexReport, ...]
    delay_ms: float | None
    read_ms: float | None
    write_ms: float | None
    buffer_hits: int | None
    buffer_reads: int | None
    buffer_dirtied: int | None
    wal_records: int | None
    wal_fpi: int | None
    wal_bytes: int | None
    elapsed_s: float | None
    wraparound: bool = False
    tuples_frozen: int | None = None
    #: The vacuum's own CPU time, user plus system (getrusage): unlike ``elapsed_s`` it does
    #: not grow while other processes hold the cores.
    cpu_s: float | None = None


def parse_report(text: str) -> VacuumReport:
    """The first vacuum report in ``text``: a VACUUM VERBOSE notice, or a server log entry
    with its continuation lines (the log line prefix gives ``at``)."""
    header = _HEADER.search(text)
    if header is None:
        snippet = text.strip().splitlines()[0][:80] if text.strip() else ""
        raise VacuumlabError(f"not a PostgreSQL vacuum report: {snippet!r}")
    line_start = text.rfind("\n", 0, header.start()) + 1
    prefix = text[line_start : header.start()]
    body = _body(text[header.end() :], logged=bool(prefix.strip()))
    return _report(header, prefix=prefix, body=body, preamble=text[: header.start()])


def reports_in_log(text: str, relation: str | None = None) -> list[VacuumReport]:
    """Every automatic vacuum entry in a chunk of server log (stderr format), in order;
    only those of ``relation`` ("db.schema.table", as the log prints it) when given.

    Analyze entries, manual VACUUM output and unrelated lines are skipped; an entry ends at
    the first line that does not start with a TAB, so other processes' lines may interleave.
    """
    reports = [parse_report(entry) for entry in _log_entries(text)]
    return [r for r in reports if relation is None or r.relation == relation]


def _log_entries(text: str) -> Iterator[str]:
    entry: list[str] | None = None
    for line in text.split("\n"):
        line = line.removesuffix("\r")
        if entry is not None and line.startswith("\t"):
            entry.append(line)
            continue
        if entry is not None:
            yield "\n".join(entry)
        header = _HEADER.search(line)
        entry = [line] if header is not None and header["kind"] != "finished vacuuming" else None
    if entry is not None:
        yield "\n".join(entry)


def _body(rest: str, *, logged: bool) -> str:
    """The report's lines after its first line: the TAB-led ones of a server log entry (its
    first line has a prefix, or its second starts with a TAB), otherwise every line up to the
    next report (a VERBOSE notice, or a csvlog/jsonlog message, has nothing else)."""
    lines = rest.split("\n")[1:]
    if logged or (lines and lines[0].startswith("\t")):
        end = next((i for i, line in enumerate(lines) if not line.startswith("\t")), len(lines))
        return "\n".join(lines[:end])
    end = next((i for i, line in enumerate(lines) if _HEADER.search(line)), len(lines))
    return "\n".join(lines[:end])


def _report(header: re.Match[str], *, prefix: str, body: str, preamble: str) -> VacuumReport:
    relation = header["relation"]
    automatic = header["kind"] != "finished vacuuming"
    # VERBOSE says "aggressively vacuuming" in the notice before "finished vacuuming".
    verbose_aggressive = f'aggressively vacuuming "{relation}"' in preamble
    pages_removed, pages_remain, pages_scanned = _ints(_PAGES, body)
    tuples_removed, tuples_remain, tuples_dead = _ints(_TUPLES, body)
    frozen_pages, tuples_frozen = _ints(_FROZEN, body)
    vm_all_visible, vm_all_frozen = _ints(_VM, body)
    read_ms, write_ms = _io_timings(body)
    hits, reads, dirtied = _ints(_BUFFERS, body)
    wal_records, wal_fpi, wal_bytes = _ints(_WAL, body)
    return VacuumReport(
        relation=relation,
        automatic=automatic,
        aggressive=header["aggressive"] is not None or (not automatic and verbose_aggressive),
        at=_timestamp(prefix),
        index_scans=int(header["scans"]),
        pages_removed=pages_removed,
        pages_remain=pages_remain,
        pages_scanned=pages_scanned,
        tuples_removed=tuples_removed,
        tuples_remain=tuples_remain,
        tuples_dead_not_removable=tuples_dead,
        frozen_pages=frozen_pages,
        vm_all_visible=vm_all_visible,
        vm_all_frozen=vm_all_frozen,
        indexes=tuple(_index(m) for m in _INDEX.finditer(body)),
        delay_ms=_floats(_DELAY, body)[0],
        read_ms=read_ms,
        write_ms=write_ms,
        buffer_hits=hits,
        buffer_reads=reads,
        buffer_dirtied=dirtied,
        wal_records=wal_records,
        wal_fpi=wal_fpi,
        wal_bytes=wal_bytes,
        elapsed_s=_floats(_ELAPSED, body)[0],
        wraparound=header["wraparound"] is not None,
        tuples_frozen=tuples_frozen,
        cpu_s=_cpu(body),
    )


def _groups(pattern: re.Pattern[str], body: str) -> tuple[str | None, ...]:
    match = pattern.search(body)
    return match.groups() if match else (None,) * pattern.groups


def _ints(pattern: re.Pattern[str], body: str) -> tuple[int | None, ...]:
    return tuple(None if g is None else int(g) for g in _groups(pattern, body))


def _floats(pattern: re.Pattern[str], body: str) -> tuple[float | None, ...]:
    return tuple(None if g is None else float(g) for g in _groups(pattern, body))


def _cpu(body: str) -> float | None:
    user, system = _floats(_CPU, body)
    return None if user is None or system is None else round(user + system, 6)


def _io_timings(body: str) -> tuple[float | None, float | None]:
    read_ms, write_ms = _floats(_IO, body)
    if read_ms is not None or _IO_OLD.search(body) is None:
        return read_ms, write_ms
    # The old format left out a part that was zero.
    old_read, old_write = _floats(_IO_OLD, body)
    return old_read or 0.0, old_write or 0.0


def _index(match: re.Match[str]) -> IndexReport:
    name, total, newly, current, reusable = match.groups()
    return IndexReport(name, int(total), int(newly), int(current), int(reusable))


def _timestamp(prefix: str) -> datetime | None:
    """The log line's timestamp: aware for UTC/GMT and numeric offsets, naive for other zone
    abbreviations (which are ambiguous: "IST" is three zones)."""
    match = _TIMESTAMP.search(prefix)
    if match is None:
        return None
    stamp = datetime.fromisoformat(match[1])
    zone = match[2]
    if zone is None or (zone.isalpha() and zone.upper() not in _UTC_NAMES):
        return stamp
    return stamp.replace(tzinfo=UTC if zone.isalpha() else _offset(zone))


def _offset(zone: str) -> timezone:
    digits = zone[1:].replace(":", "")
    delta = timedelta(hours=int(digits[:2]), minutes=int(digits[2:] or 0))
    return timezone(-delta if zone[0] == "-" else delta)
