-- pg_stat_all_tables.total_autovacuum_time of relation {rel}, which 18 adds: before, unknown.
NULL::float8
