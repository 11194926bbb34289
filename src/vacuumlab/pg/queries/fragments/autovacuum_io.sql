-- Bytes all autovacuum workers have read and written (pg_stat_io, which 16 adds): before,
-- unknown.
NULL::bigint AS autovacuum_read_bytes, NULL::bigint AS autovacuum_write_bytes
