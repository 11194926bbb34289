-- One 1 Hz sample of the relations a verification watches (13+): dead tuples, autovacuums so
-- far and the main fork's size, each relation by oid (heaps and TOAST relations alike).
SELECT s.relid::bigint AS relid,
       clock_timestamp() AS at,
       s.n_dead_tup,
       s.autovacuum_count,
       pg_relation_size(s.relid) AS heap_bytes
  FROM pg_stat_all_tables s
 WHERE s.relid = ANY(%(relids)s::bigint[]::oid[])
