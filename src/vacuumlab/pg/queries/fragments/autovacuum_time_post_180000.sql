-- pg_stat_all_tables.total_autovacuum_time of relation {rel}, in milliseconds (18+).
pg_stat_get_total_autovacuum_time({rel}.oid)
