-- The settings a study's step runs with, as a new session reads them (13+): every autovacuum_*
-- and vacuum_* setting, and the others the run's steps name; setting is in the base unit.
SELECT name, setting
  FROM pg_settings
 WHERE name ~ '^(autovacuum|vacuum_)' OR name = ANY(%(names)s::text[])
 ORDER BY name
