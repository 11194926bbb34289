-- WAL insert position; 13 has no pg_stat_wal.
SELECT CASE WHEN pg_is_in_recovery() THEN NULL ELSE pg_current_wal_lsn()::text END AS lsn,
       NULL::bigint AS wal_records, NULL::bigint AS wal_fpi, NULL::bigint AS wal_bytes,
       NULL::bigint AS wal_buffers_full
