-- The schema an extension is installed in (pg_extension); no row when it is not installed.
-- nspname unquoted: callers quote it with sql.Identifier.
SELECT n.nspname AS schema_name
  FROM pg_extension e
  JOIN pg_namespace n ON n.oid = e.extnamespace
 WHERE e.extname = %(name)s
