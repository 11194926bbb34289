-- The change counters of every table in one schema (13+): the custom study's replayed rates.
SELECT c.oid::bigint AS oid, c.relname AS name,
       s.n_tup_ins AS inserts, s.n_tup_upd AS updates, s.n_tup_hot_upd AS hot_updates,
       s.n_tup_del AS deletes, s.n_dead_tup AS dead_tuples
  FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace
  JOIN pg_stat_all_tables s ON s.relid = c.oid
 WHERE n.nspname = %(schema)s AND c.relkind IN ('r', 'p')
 ORDER BY c.oid
