-- Every setting vacuum and autovacuum depend on, as the server reports it (13+); shown is the
-- value as SHOW gives it ("128MB", not the raw 16384 of unit 8kB).
SELECT name, setting, unit, vartype, source, context, pending_restart,
       current_setting(name) AS shown
  FROM pg_settings
 WHERE name ~ 'vacuum'
    OR name IN ('track_counts', 'maintenance_work_mem', 'shared_buffers', 'effective_cache_size',
                'effective_io_concurrency', 'maintenance_io_concurrency', 'io_combine_limit',
                'max_worker_processes', 'max_parallel_maintenance_workers',
                'old_snapshot_threshold', 'hot_standby_feedback', 'max_standby_streaming_delay',
                'idle_in_transaction_session_timeout', 'transaction_timeout',
                'statement_timeout', 'max_prepared_transactions', 'max_connections',
                'checkpoint_timeout', 'max_wal_size', 'wal_level', 'full_page_writes',
                'wal_compression', 'track_io_timing', 'track_wal_io_timing',
                'track_cost_delay_timing', 'default_statistics_target', 'block_size',
                'bgwriter_delay', 'bgwriter_lru_maxpages', 'bgwriter_lru_multiplier',
                'stats_fetch_consistency', 'lock_timeout', 'data_checksums', 'io_method')
 ORDER BY name
