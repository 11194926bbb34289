"""vacuumlab: measure, explain and tune PostgreSQL vacuum for high-churn tables."""

__version__ = "0.1.0"
