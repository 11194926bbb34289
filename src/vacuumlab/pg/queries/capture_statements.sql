-- This database's pg_stat_statements entries (13+; before 14 every entry is top-level),
-- summed per queryid over roles, in the schema the caller names for the extension. With
-- showtext false the server reads no query texts (the window's first read); the texts are
-- parsed by the caller and never kept. query is NULL, or '<insufficient privilege>', for
-- another role's statement unless the role has pg_read_all_stats (pg_monitor has it): those
-- come summed in one row with queryid NULL.
SELECT queryid, sum(calls)::bigint AS calls, sum(rows)::bigint AS rows,
       sum(total_exec_time)::float8 AS total_ms, min(query) AS query
  FROM {schema}.pg_stat_statements(%(showtext)s)
 WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
 GROUP BY queryid
