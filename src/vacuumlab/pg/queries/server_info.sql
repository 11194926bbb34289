-- Who and what the server is, learnt once per session (13+), and how large this database's
-- pg_class is (pg/connect.py: not part of ServerInfo; the snapshot splits its tables question
-- in two on a large catalog).
SELECT current_setting('server_version_num')::int AS version_num,
       version() AS version,
       current_database() AS database,
       current_user AS "user",
       coalesce((SELECT rolsuper FROM pg_roles WHERE rolname = current_user), false) AS is_superuser,
       pg_is_in_recovery() AS in_recovery,
       current_setting('block_size')::int AS block_size,
       pg_has_role(current_user, 'pg_read_all_stats', 'USAGE') AS can_read_all_stats,
       has_function_privilege('pg_catalog.pg_stat_file(text, boolean)', 'EXECUTE')
           AS can_stat_files,
       ARRAY(SELECT extname::text FROM pg_extension) AS extensions,
       ARRAY(SELECT c.relname || '.' || a.attname
               FROM pg_attribute a
               JOIN pg_class c ON c.oid = a.attrelid
              WHERE c.relnamespace = 'pg_catalog'::regnamespace
                AND c.relname IN ('pg_class', 'pg_stat_all_tables', 'pg_stat_io',
                                  'pg_stat_wal', 'pg_stat_checkpointer', 'pg_stat_bgwriter',
                                  'pg_stat_progress_vacuum', 'pg_stat_activity')
                AND a.attnum > 0 AND NOT a.attisdropped) AS columns,
       pg_relation_size('pg_catalog.pg_class') AS catalog_bytes
