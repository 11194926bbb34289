"""pgbench's per-transaction logs, read into one sorted table of every thread's transactions.

A fast path parses the plain numeric log with numpy in one pass; anything it does not expect
(failures, skipped transactions, odd spacing) falls back to a line-by-line parser that names
the offending line.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final, TypeAlias

import numpy as np
from numpy.typing import NDArray

from vacuumlab.errors import VacuumlabError

FloatArray: TypeAlias = NDArray[np.float64]

#: What pgbench writes in the ``time`` field of a transaction that did not complete: ``skipped``
#: (--latency-limit), ``failed``, or with --failures-detailed the kind of failure.
NOT_COMPLETED: Final = frozenset({"skipped", "failed", "serialization", "deadlock", "other"})
_MIN_FIELDS: Final = 6  # client_id transaction_no time script_no time_epoch time_us
_MAX_FIELDS: Final = 8  # ... [schedule_lag] [retries]
_TIME: Final = 2
_EPOCH: Final = 4
_USEC: Final = 5
#: Stands for a NOT_COMPLETED word once parsed; a real latency is never negative.
_FAILED: Final = -1.0
#: Longer integers are not pgbench's, and above 2**53 a float would no longer hold them exactly.
_MAX_DIGITS: Final = 15
_DIGITS_ONLY: Final = np.zeros(256, dtype=np.bool_)
_DIGITS_ONLY[[*b"0123456789", *b" \n-"]] = True


@dataclass(frozen=True, slots=True)
class Transactions:
    """The transactions of one pgbench run, all threads merged.

    ``end`` is when a transaction completed (epoch seconds, ascending), ``latency_ms`` its
    latency; ``failed_end`` holds the completion times of failed and skipped transactions,
    which have no latency. The arrays are read-only.
    """

    end: FloatArray
    latency_ms: FloatArray
    failed_end: FloatArray

    def __post_init__(self) -> None:
        # Every window lookup bisects ``end``: an unsorted array would silently lose data.
        if self.end.shape != self.latency_ms.shape or self.end.ndim != 1:
            raise ValueError("end and latency_ms must be 1-d arrays of the same length")
        if np.any(np.diff(self.end) < 0) or np.any(np.diff(self.failed_end) < 0):
            raise ValueError("end and failed_end must be sorted ascending")


def read_pgbench_logs(paths: Iterable[Path]) -> Transactions:
    """Read pgbench's per-transaction logs (one file per thread) into one sorted record."""
    return _merge([_parse(_read(path), str(path)) for path in paths])


def parse_pgbench_log_lines(lines: Iterable[str], *, source: str = "<lines>") -> Transactions:
    """Parse per-transaction log lines; ``source`` names them in error messages."""
    text = "\n".join(line.rstrip("\n") for line in lines)
    return _merge([_parse(text.encode(), source)])


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise VacuumlabError(f"cannot read pgbench log {path}: {exc.strerror or exc}") from exc


def _merge(tables: list[FloatArray]) -> Transactions:
    rows = np.concatenate([np.empty((0, 2)), *tables])
    rows = rows[np.argsort(rows[:, 0], kind="stable")]
    failed = rows[:, 1] == _FAILED
    return Transactions(
        end=_frozen(rows[~failed, 0]),
        latency_ms=_frozen(rows[~failed, 1] / 1000.0),
        failed_end=_frozen(rows[failed, 0]),
    )


def _frozen(values: FloatArray) -> FloatArray:
    values = np.ascontiguousarray(values, dtype=np.float64)
    values.flags.writeable = False
    return values


def _parse(data: bytes, source: str) -> FloatArray:
    """Rows of (completion time, latency in µs or _FAILED) of one log, in file order."""
    rows = _parse_fast(data)
    if rows is None:
        # The line-by-line parser is slow but names the offending line.
        rows = _parse_slowly(data.decode(errors="replace"), source)
    return rows


def _parse_fast(data: bytes) -> FloatArray | None:
    """Vectorised parse of a well-formed log; None when anything looks unusual."""
    if b"-" in data or not _single_spaced(data):
        return None
    for word in NOT_COMPLETED:
        if f" {word} ".encode() in data:
            data = data.replace(f" {word} ".encode(), f" {_FAILED:.0f} ".encode())
    raw = np.frombuffer(data, dtype=np.uint8)
    fields = _fields_per_line(raw)
    if fields is None or not _DIGITS_ONLY[raw].all():
        return None
    if fields == 0:
        return np.empty((0, 2))  # np.fromstring returns [-1.] for blank text
    try:
        flat = np.fromstring(data, dtype=np.float64, sep=" ")
    except ValueError:
        return None
    if flat.size % fields:
        return None
    table = flat.reshape(-1, fields)
    return _times(table) if _plausible(table) else None


def _single_spaced(data: bytes) -> bool:
    """Fields separated by exactly one space, so that spaces + 1 = fields on every line."""
    stray = (b"  ", b" \n", b"\n ")
    return not (data.startswith(b" ") or data.endswith(b" ") or any(s in data for s in stray))


def _fields_per_line(raw: NDArray[np.uint8]) -> int | None:
    """The common number of fields of the non-blank lines: 0 if none, None if they differ."""
    line_ends = np.flatnonzero(raw == ord("\n"))
    if raw.size and raw[-1] != ord("\n"):
        line_ends = np.append(line_ends, raw.size)
    lengths = np.diff(line_ends, prepend=-1) - 1
    spaces = np.bincount(
        np.searchsorted(line_ends, np.flatnonzero(raw == ord(" "))), minlength=line_ends.size
    )
    fields = spaces[lengths > 0] + 1
    if fields.size == 0:
        return 0
    first = int(fields[0])
    return first if _MIN_FIELDS <= first <= _MAX_FIELDS and (fields == first).all() else None


def _plausible(table: FloatArray) -> bool:
    """What the line-by-line parser would accept, given the digits-only text."""
    others = np.arange(table.shape[1]) != _TIME  # time holds the _FAILED markers
    return bool(
        (table[:, others] >= 0).all()
        and (table < 10.0**_MAX_DIGITS).all()
        and (table[:, _USEC] < 1_000_000).all()
    )


def _times(table: FloatArray) -> FloatArray:
    end = table[:, _EPOCH] + table[:, _USEC] * 1e-6
    return np.column_stack([end, table[:, _TIME]])


def _parse_slowly(text: str, source: str) -> FloatArray:
    rows: list[tuple[float, float]] = []
    for number, line in enumerate(text.split("\n"), start=1):
        fields = line.split()
        if fields:  # blank lines carry nothing; pgbench ends its files with a newline
            rows.append(_parse_fields(fields, f"{source} line {number}"))
    return np.array(rows, dtype=np.float64).reshape(-1, 2)


def _parse_fields(fields: list[str], where: str) -> tuple[float, float]:
    def malformed(reason: str) -> VacuumlabError:
        line = " ".join(fields)
        shown = line if len(line) <= 80 else line[:77] + "..."
        return VacuumlabError(f"{where}: {reason}: {shown!r}")

    if not _MIN_FIELDS <= len(fields) <= _MAX_FIELDS:
        raise malformed(f"expected {_MIN_FIELDS} to {_MAX_FIELDS} fields, got {len(fields)}")
    if not all(_is_count(f) for i, f in enumerate(fields) if i != _TIME):
        raise malformed("every field but time must be a non-negative integer")
    if int(fields[_USEC]) >= 1_000_000:
        raise malformed("time_us must be below 1000000")
    time = fields[_TIME]
    if time in NOT_COMPLETED:
        latency = _FAILED
    elif _is_count(time):
        latency = float(time)
    else:
        raise malformed("time must be microseconds, 'failed' or 'skipped'")
    return float(fields[_EPOCH]) + float(fields[_USEC]) * 1e-6, latency


def _is_count(field: str) -> bool:
    return field.isascii() and field.isdigit() and len(field) <= _MAX_DIGITS
