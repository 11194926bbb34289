"""Numerical statistics only: aggregates, confidence intervals, tests of difference, verdicts.
Pure numpy and scipy; nothing here talks to a server."""
