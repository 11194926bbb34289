-- Bytes all autovacuum workers have read and written of tables and indexes: 18 reports
-- pg_stat_io in bytes, and counts WAL I/O too (object 'wal'), which is left out.
(SELECT coalesce(sum(read_bytes), 0) FROM pg_stat_io
         WHERE backend_type = 'autovacuum worker' AND object <> 'wal')::bigint
           AS autovacuum_read_bytes,
       (SELECT coalesce(sum(write_bytes), 0) FROM pg_stat_io
         WHERE backend_type = 'autovacuum worker' AND object <> 'wal')::bigint
           AS autovacuum_write_bytes
