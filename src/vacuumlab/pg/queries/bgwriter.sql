-- Background writer counters, with the backends' own writes (13+).
SELECT buffers_clean, maxwritten_clean, buffers_alloc, buffers_backend
  FROM pg_stat_bgwriter
