-- 14 adds pg_stat_statements.toplevel: nested statements get entries of their own.
SELECT userid::bigint AS userid, queryid, toplevel, calls, total_exec_time, stddev_exec_time
  FROM {schema}.pg_stat_statements
 WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
   AND starts_with(query, %(prefix)s)
