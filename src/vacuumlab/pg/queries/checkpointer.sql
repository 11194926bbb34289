-- Checkpoint counters; before 17 they live in pg_stat_bgwriter (13+).
SELECT checkpoints_timed AS num_timed, checkpoints_req AS num_requested,
       checkpoint_write_time AS write_time_ms, checkpoint_sync_time AS sync_time_ms,
       buffers_checkpoint AS buffers_written
  FROM pg_stat_bgwriter
