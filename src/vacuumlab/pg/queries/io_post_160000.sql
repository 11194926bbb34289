-- pg_stat_io appears in 16. It reports operations and op_bytes; bytes are computed here
-- (each operation is one block of op_bytes in 16 and 17).
SELECT backend_type, object, context,
       reads, (reads * op_bytes)::bigint AS read_bytes, read_time AS read_time_ms,
       writes, (writes * op_bytes)::bigint AS write_bytes, write_time AS write_time_ms,
       writebacks, extends, (extends * op_bytes)::bigint AS extend_bytes,
       hits, evictions, reuses, fsyncs
  FROM pg_stat_io
 WHERE coalesce(reads, 0) + coalesce(writes, 0) + coalesce(extends, 0) + coalesce(hits, 0)
       + coalesce(evictions, 0) + coalesce(reuses, 0) + coalesce(fsyncs, 0)
       + coalesce(writebacks, 0) > 0
 ORDER BY backend_type, object, context
