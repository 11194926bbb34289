-- The autovacuum workers alive now (13+), in every database: each holds a worker slot and,
-- vacuuming or analyzing, takes part in the cost balance
-- (autovac_recalculate_workers_for_balance() in autovacuum.c); pg_stat_progress_vacuum shows
-- only those vacuuming. backend_start is its launch; relid the relation it vacuums or
-- analyzes now (NULL between two).
SELECT a.pid, a.datname AS database, a.backend_start,
       coalesce(v.relid, z.relid)::bigint AS relid,
       CASE WHEN v.pid IS NOT NULL THEN 'vacuum' WHEN z.pid IS NOT NULL THEN 'analyze' END AS doing
  FROM pg_stat_activity a
  LEFT JOIN pg_stat_progress_vacuum v ON v.pid = a.pid
  LEFT JOIN pg_stat_progress_analyze z ON z.pid = a.pid
 WHERE a.backend_type = 'autovacuum worker'
 ORDER BY a.backend_start, a.pid
