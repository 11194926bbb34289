-- One 1 Hz sample of the scheduling study's tables (13+): dead tuples and each table's
-- autovacuum count and the end of its latest one; no total_autovacuum_time before 18.
SELECT clock_timestamp() AS at, s.relname AS table_name, s.n_dead_tup, s.autovacuum_count,
       s.last_autovacuum, NULL::float8 AS total_autovacuum_time_ms
  FROM pg_stat_all_tables s
 WHERE s.schemaname = %(schema)s AND s.relname = ANY(%(tables)s)
