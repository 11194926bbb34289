-- Backends holding an xid or a snapshot, oldest first: they hold the xmin horizon (13+).
-- The age is that of the older of the two, the horizon the backend pins.
SELECT pid, backend_type, datname AS database, usename AS user_name, application_name, state,
       backend_xid::text::bigint AS backend_xid, backend_xmin::text::bigint AS backend_xmin,
       greatest(age(backend_xid), age(backend_xmin)) AS xmin_age,
       xact_start, query_start, state_change,
       CASE WHEN wait_event IS NOT NULL THEN wait_event_type || ':' || wait_event END
           AS wait_event,
       left(query, 500) AS query
  FROM pg_stat_activity
 WHERE (backend_xmin IS NOT NULL OR backend_xid IS NOT NULL) AND pid <> pg_backend_pid()
 ORDER BY greatest(age(backend_xid), age(backend_xmin)) DESC, pid
