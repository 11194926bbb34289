-- One 1 Hz sample of the scheduling study's tables. 18 adds total_autovacuum_time, so a
-- vacuum's start is its end (last_autovacuum) less its share of the time added since.
SELECT clock_timestamp() AS at, s.relname AS table_name, s.n_dead_tup, s.autovacuum_count,
       s.last_autovacuum, s.total_autovacuum_time AS total_autovacuum_time_ms
  FROM pg_stat_all_tables s
 WHERE s.schemaname = %(schema)s AND s.relname = ANY(%(tables)s)
