-- What each racing vacuum session of the TOAST study is doing: its wait event, its vacuum
-- phase and relation, the heavyweight lock it is queued for (if any) and who holds it up.
-- The sessions are found by the application_name they connect with.
SELECT a.pid, a.state, a.wait_event_type, a.wait_event,
       p.phase, p.relid::bigint AS vacuum_relid,
       l.mode AS lock_mode, l.relation::bigint AS lock_relid,
       pg_blocking_pids(a.pid) AS blocked_by
  FROM pg_stat_activity a
  LEFT JOIN pg_stat_progress_vacuum p ON p.pid = a.pid
  LEFT JOIN LATERAL (SELECT mode, relation FROM pg_locks
                      WHERE pid = a.pid AND NOT granted
                      LIMIT 1) AS l ON true
 WHERE a.application_name = 'vacuumlab-toast-race'
   AND a.datname = current_database()
 ORDER BY a.pid
