-- pg_stat_all_tables' total time in (auto)vacuum and (auto)analyze of relation {rel}, which
-- 18 adds: before, unknown.
NULL::float8 AS total_vacuum_time_ms,
       NULL::float8 AS total_autovacuum_time_ms,
       NULL::float8 AS total_analyze_time_ms,
       NULL::float8 AS total_autoanalyze_time_ms
