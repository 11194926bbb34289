-- Heap and index blocks read and hit for one table, zero where it has none (13+).
SELECT coalesce(heap_blks_read, 0) AS heap_blks_read, coalesce(heap_blks_hit, 0) AS heap_blks_hit,
       coalesce(idx_blks_read, 0) AS idx_blks_read, coalesce(idx_blks_hit, 0) AS idx_blks_hit
  FROM pg_statio_all_tables
 WHERE relid = %(relid)s::bigint::oid
