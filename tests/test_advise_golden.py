"""The advice on a saved pair of snapshots is pinned: a change made for speed must give the same
advice, finding for finding and table for table.

The pair (``data/advise_pair.json.gz``) was collected from the embedded PostgreSQL 18: 400 of
10,000 tables, 300 of them inserted into, updated and deleted from between the two snapshots,
a few with their own reloptions, and a handful of ages and counters raised by hand so the
wraparound and queue questions have something to say. When the advice is meant to change,
rewrite the expected file with ``.venv/bin/python tests/test_advise_golden.py`` and read the
diff of its decompressed JSON before committing it.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from vacuumlab.advise import advise
from vacuumlab.records.snapshot import Snapshot, parse_snapshot

DATA = Path(__file__).parent / "data"
PAIR = DATA / "advise_pair.json.gz"
EXPECTED = DATA / "advise_pair.advice.json.gz"
#: Which snapshots each case advises from: the later one alone, and the two as an interval.
CASES = {"one": ("later",), "interval": ("first", "later")}


def _pair() -> dict[str, Snapshot]:
    raw = json.loads(gzip.decompress(PAIR.read_bytes()))
    return {key: parse_snapshot(value, f"{PAIR.name}:{key}") for key, value in raw.items()}


def advice_now() -> dict[str, Any]:
    """Each case's advice as JSON data, as the code gives it today, every relation listed
    (the quiet ones too: test_advise_quiet.py checks what leaving them out changes)."""
    pair = _pair()
    result: dict[str, Any] = {}
    for case, keys in CASES.items():
        advice = advise(*(pair[k] for k in keys), every=True)
        result[case] = json.loads(advice.model_dump_json())
        del result[case]["vacuumlab_version"]  # a release is not a change of advice
        assert result[case].pop("quiet") == 0  # every relation is in the status table
    return result


@pytest.mark.parametrize("case", CASES)
def test_advice_on_the_saved_pair_is_unchanged(case: str) -> None:
    expected = json.loads(gzip.decompress(EXPECTED.read_bytes()))[case]
    actual = advice_now()[case]
    assert actual["findings"], "the pair must give findings to compare"
    assert len(actual["tables"]) == 800
    for key in ("findings", "tables"):
        assert len(actual[key]) == len(expected[key]), key
        for i, (got, want) in enumerate(zip(actual[key], expected[key], strict=True)):
            assert got == want, f"{key}[{i}] differs"
    assert actual == expected


if __name__ == "__main__":
    text = json.dumps(advice_now(), indent=1, sort_keys=True)
    EXPECTED.write_bytes(gzip.compress(text.encode(), compresslevel=9, mtime=0))
    print(f"wrote {EXPECTED} ({len(text):,} characters of JSON)")
