-- The dead tuples the statistics system holds for one table (13+); a backend flushes its
-- counts asynchronously, so callers poll this until it catches up.
SELECT n_dead_tup
  FROM pg_stat_all_tables
 WHERE relid = %(relid)s::bigint::oid
