-- The autovacuum workers alive now and when each started (backend_start: its launch).
SELECT pid, backend_start
  FROM pg_stat_activity
 WHERE backend_type = 'autovacuum worker'
