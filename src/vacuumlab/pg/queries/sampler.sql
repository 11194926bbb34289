-- One 1 Hz sample of a table under study (13+; the autovacuum time, which 18 adds, and the
-- autovacuum workers' I/O, which 16 adds, are NULL before).
SELECT clock_timestamp() AS at,
       s.n_dead_tup, s.n_live_tup, s.autovacuum_count, s.last_autovacuum,
       {autovacuum_time:c} AS total_autovacuum_time_ms,
       pg_relation_size(c.oid) AS heap_bytes,
       (SELECT coalesce(sum(pg_relation_size(i.indexrelid)), 0)
          FROM pg_index i WHERE i.indrelid = c.oid)::bigint AS index_bytes,
       CASE WHEN c.reltoastrelid = 0 THEN 0
            ELSE pg_total_relation_size(c.reltoastrelid) END AS toast_bytes,
       (SELECT count(*) FROM pg_stat_progress_vacuum p WHERE p.relid = c.oid)::int
           AS vacuum_running,
       {autovacuum_io:c}
  FROM pg_class c
  LEFT JOIN pg_stat_all_tables s ON s.relid = c.oid
 WHERE c.oid = %(relid)s
