-- pg_stat_all_tables' total time in (auto)vacuum and (auto)analyze of relation {rel} (18+).
pg_stat_get_total_vacuum_time({rel}.oid) AS total_vacuum_time_ms,
       pg_stat_get_total_autovacuum_time({rel}.oid) AS total_autovacuum_time_ms,
       pg_stat_get_total_analyze_time({rel}.oid) AS total_analyze_time_ms,
       pg_stat_get_total_autoanalyze_time({rel}.oid) AS total_autoanalyze_time_ms
