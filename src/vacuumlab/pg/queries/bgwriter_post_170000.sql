-- 17 drops buffers_backend from pg_stat_bgwriter (pg_stat_io has the backends' writes).
SELECT buffers_clean, maxwritten_clean, buffers_alloc, NULL::bigint AS buffers_backend
  FROM pg_stat_bgwriter
