-- Timings of this database's statements that start with a prefix, from pg_stat_statements
-- in the schema the caller names for the extension (13+; every entry is top-level before 14).
SELECT userid::bigint AS userid, queryid, true AS toplevel, calls, total_exec_time,
       stddev_exec_time
  FROM {schema}.pg_stat_statements
 WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
   AND starts_with(query, %(prefix)s)
