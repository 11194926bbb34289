-- 17 moves checkpoint counters to pg_stat_checkpointer.
SELECT num_timed, num_requested, write_time AS write_time_ms, sync_time AS sync_time_ms,
       buffers_written
  FROM pg_stat_checkpointer
