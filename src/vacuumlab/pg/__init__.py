"""Everything that talks to a PostgreSQL server."""
