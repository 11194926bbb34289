-- Vacuums running now. 17 counts dead items by id and by bytes of the TidStore, against
-- max_dead_tuple_bytes, and adds index progress.
SELECT p.pid, p.datname AS database, p.relid::bigint AS relid,
       CASE WHEN p.datname = current_database() THEN p.relid::regclass::text END AS relation,
       coalesce(a.backend_type = 'autovacuum worker', false) AS is_autovacuum, p.phase,
       a.xact_start AS started, p.heap_blks_total, p.heap_blks_scanned, p.heap_blks_vacuumed,
       p.index_vacuum_count, p.num_dead_item_ids AS dead_tuples, p.indexes_total,
       p.indexes_processed, NULL::float8 AS delay_time_ms,
       NULL::bigint AS max_dead_tuples, p.dead_tuple_bytes, p.max_dead_tuple_bytes
  FROM pg_stat_progress_vacuum p
  LEFT JOIN pg_stat_activity a ON a.pid = p.pid
 ORDER BY p.pid
