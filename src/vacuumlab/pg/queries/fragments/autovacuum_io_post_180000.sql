-- Bytes all autovacuum workers have read and written: 18 reports pg_stat_io in bytes.
(SELECT coalesce(sum(read_bytes), 0) FROM pg_stat_io
         WHERE backend_type = 'autovacuum worker')::bigint AS autovacuum_read_bytes,
       (SELECT coalesce(sum(write_bytes), 0) FROM pg_stat_io
         WHERE backend_type = 'autovacuum worker')::bigint AS autovacuum_write_bytes
