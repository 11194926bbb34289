-- One table's update, HOT and vacuum counters, block I/O and sizes (13+; n_tup_newpage_upd,
-- which 16 adds, is NULL before).
SELECT s.n_tup_upd, s.n_tup_hot_upd, {newpage_updated:c} AS n_tup_newpage_upd,
       s.autovacuum_count,
       coalesce(io.heap_blks_hit, 0) AS heap_blks_hit,
       coalesce(io.heap_blks_read, 0) AS heap_blks_read,
       coalesce(io.idx_blks_hit, 0) AS idx_blks_hit,
       coalesce(io.idx_blks_read, 0) AS idx_blks_read,
       pg_relation_size(c.oid) AS heap_bytes, pg_indexes_size(c.oid) AS index_bytes
  FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace
  JOIN pg_stat_all_tables s ON s.relid = c.oid
  JOIN pg_statio_all_tables io ON io.relid = c.oid
 WHERE n.nspname = %(schema)s AND c.relname = %(name)s
