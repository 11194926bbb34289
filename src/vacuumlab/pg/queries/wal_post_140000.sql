-- 14 adds pg_stat_wal: records, full-page images, bytes.
SELECT CASE WHEN pg_is_in_recovery() THEN NULL ELSE pg_current_wal_lsn()::text END AS lsn,
       wal_records, wal_fpi, wal_bytes::bigint AS wal_bytes, wal_buffers_full
  FROM pg_stat_wal
