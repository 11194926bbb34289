"""The version matrix on PostgreSQL 16 to 18 (tests/helpers/matrix.py has the tests and why;
the other majors are in the other matrix file, so that CI's two test processes share them)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.matrix import (
    Versioned,
    serve,
    test_advise_at_once,
    test_advise_over_an_interval,
    test_capture_then_a_short_replay,
    test_every_major_s_sandbox_has_data_checksums,
    test_exporter_scrape,
    test_sandbox_starts_and_stops,
    test_snapshot,
    test_the_ranges_of_the_server_knobs,
    test_the_settings_that_need_a_restart,
    test_the_table_options_a_major_takes,
    test_the_version_facts_hold,
    test_watch_refresh_shows_a_running_vacuum,
)

#: Three servers, each measured for about half a minute: CI runs them (make test-all too).
pytestmark = pytest.mark.slow

__all__ = [
    "test_advise_at_once",
    "test_advise_over_an_interval",
    "test_capture_then_a_short_replay",
    "test_every_major_s_sandbox_has_data_checksums",
    "test_exporter_scrape",
    "test_sandbox_starts_and_stops",
    "test_snapshot",
    "test_the_ranges_of_the_server_knobs",
    "test_the_settings_that_need_a_restart",
    "test_the_table_options_a_major_takes",
    "test_the_version_facts_hold",
    "test_watch_refresh_shows_a_running_vacuum",
]


@pytest.fixture(scope="module", params=(16, 17, 18), ids=lambda major: f"pg{major}")
def versioned(request: pytest.FixtureRequest, sandbox_root: Path) -> Iterator[Versioned]:
    yield from serve(request, sandbox_root)
