-- 18 counts I/O operations (reads combine up to io_combine_limit blocks) and reports bytes
-- itself; op_bytes is gone.
SELECT backend_type, object, context,
       reads, read_bytes::bigint AS read_bytes, read_time AS read_time_ms,
       writes, write_bytes::bigint AS write_bytes, write_time AS write_time_ms,
       writebacks, extends, extend_bytes::bigint AS extend_bytes,
       hits, evictions, reuses, fsyncs
  FROM pg_stat_io
 WHERE coalesce(reads, 0) + coalesce(writes, 0) + coalesce(extends, 0) + coalesce(hits, 0)
       + coalesce(evictions, 0) + coalesce(reuses, 0) + coalesce(fsyncs, 0)
       + coalesce(writebacks, 0) > 0
 ORDER BY backend_type, object, context
