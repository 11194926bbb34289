-- Bytes all autovacuum workers have read and written: pg_stat_io's operations × op_bytes (16+).
(SELECT coalesce(sum(reads * op_bytes), 0) FROM pg_stat_io
         WHERE backend_type = 'autovacuum worker')::bigint AS autovacuum_read_bytes,
       (SELECT coalesce(sum(writes * op_bytes), 0) FROM pg_stat_io
         WHERE backend_type = 'autovacuum worker')::bigint AS autovacuum_write_bytes
