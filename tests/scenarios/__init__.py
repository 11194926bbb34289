"""The advisor's scenario suite (a package, so its conftest is scenarios.conftest)."""
