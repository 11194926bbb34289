"""Models of PostgreSQL behaviour that predict what a measurement should show."""
