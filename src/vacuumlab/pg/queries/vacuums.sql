-- Vacuums running now (13+), with the dead-tuple array and its capacity (max_dead_tuples).
SELECT p.pid, p.datname AS database, p.relid::bigint AS relid,
       CASE WHEN p.datname = current_database() THEN p.relid::regclass::text END AS relation,
       coalesce(a.backend_type = 'autovacuum worker', false) AS is_autovacuum, p.phase,
       a.xact_start AS started, p.heap_blks_total, p.heap_blks_scanned, p.heap_blks_vacuumed,
       p.index_vacuum_count, p.num_dead_tuples AS dead_tuples, NULL::bigint AS indexes_total,
       NULL::bigint AS indexes_processed, NULL::float8 AS delay_time_ms,
       p.max_dead_tuples, NULL::bigint AS dead_tuple_bytes, NULL::bigint AS max_dead_tuple_bytes
  FROM pg_stat_progress_vacuum p
  LEFT JOIN pg_stat_activity a ON a.pid = p.pid
 ORDER BY p.pid
