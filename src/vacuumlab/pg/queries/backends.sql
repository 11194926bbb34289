-- Backends holding an xid or a snapshot, oldest first: they may hold the xmin horizon (13+).
-- The age is that of the older of the two, the horizon the backend pins. in_lazy_vacuum: a
-- lazy VACUUM (PROC_IN_VACUUM) pins nobody's horizon although it shows a backend_xmin; it is
-- read in the same statement as the backend, so both come from one read of the backends'
-- status (pgstat_read_current_status() in backend_status.c). rewriting: VACUUM FULL or
-- CLUSTER, which do hold the horizon.
SELECT a.pid, a.backend_type, a.datname AS database, a.usename AS user_name, a.application_name,
       a.state, a.backend_xid::text::bigint AS backend_xid,
       a.backend_xmin::text::bigint AS backend_xmin,
       greatest(age(a.backend_xid), age(a.backend_xmin)) AS xmin_age,
       a.xact_start, a.query_start, a.state_change,
       CASE WHEN a.wait_event IS NOT NULL THEN a.wait_event_type || ':' || a.wait_event END
           AS wait_event,
       left(a.query, 500) AS query,
       EXISTS (SELECT FROM pg_stat_progress_vacuum v WHERE v.pid = a.pid) AS in_lazy_vacuum,
       (SELECT c.command FROM pg_stat_progress_cluster c WHERE c.pid = a.pid) AS rewriting
  FROM pg_stat_activity a
 WHERE (a.backend_xmin IS NOT NULL OR a.backend_xid IS NOT NULL) AND a.pid <> pg_backend_pid()
 ORDER BY greatest(age(a.backend_xid), age(a.backend_xmin)) DESC, a.pid
