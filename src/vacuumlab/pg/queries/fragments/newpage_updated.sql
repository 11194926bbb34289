-- pg_stat_all_tables.n_tup_newpage_upd of relation {rel}, which 16 adds: before, unknown.
NULL::bigint
