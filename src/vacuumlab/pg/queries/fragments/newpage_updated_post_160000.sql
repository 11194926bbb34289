-- pg_stat_all_tables.n_tup_newpage_upd of relation {rel} (16+).
pg_stat_get_tuples_newpage_updated({rel}.oid)
