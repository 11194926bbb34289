"""The version matrix on PostgreSQL 16 to 18: its tests are in tests/helpers/matrix.py, shared
with the file of 13 to 15, so that CI's two test processes take half each."""

import pytest

from helpers.matrix import *  # noqa: F403 - the matrix's tests, collected here
from helpers.matrix import versioned_fixture

#: Three servers, each measured for about half a minute: CI runs them (make test-all too).
pytestmark = pytest.mark.slow

versioned = versioned_fixture((16, 17, 18))
