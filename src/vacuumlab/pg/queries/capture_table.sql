-- A captured table's storage, options and size (13+). A partitioned table's rows, pages and
-- bytes are its leaf partitions' sums (pg_partition_tree(), which has no row for a table
-- outside a partition tree: such a table is its own only leaf). A leaf no vacuum or analyze
-- has counted yet (reltuples -1) counts with the live tuples of its statistics. toast_bytes
-- holds the TOAST relations' heaps and indexes.
SELECT coalesce(c.reloptions, '{}') AS reloptions,
       coalesce(t.reloptions, '{}') AS toast_reloptions,
       CASE WHEN c.relkind = 'p' THEN pg_get_partkeydef(c.oid) END AS partitioning,
       leaves.partitions, leaves.rows, leaves.pages, leaves.heap_bytes, leaves.toast_bytes,
       leaves.index_bytes
  FROM pg_class c
  LEFT JOIN pg_class t ON t.oid = c.reltoastrelid
 CROSS JOIN LATERAL (
     SELECT count(*) FILTER (WHERE l.oid <> c.oid) AS partitions,
            coalesce(sum(CASE WHEN l.reltuples >= 0 THEN l.reltuples::float8
                              ELSE pg_stat_get_live_tuples(l.oid)::float8 END), 0) AS rows,
            coalesce(sum(l.relpages), 0)::bigint AS pages,
            coalesce(sum(pg_relation_size(l.oid)), 0)::bigint AS heap_bytes,
            coalesce(sum(pg_total_relation_size(l.reltoastrelid))
                     FILTER (WHERE l.reltoastrelid <> 0), 0)::bigint AS toast_bytes,
            coalesce(sum(pg_indexes_size(l.oid)), 0)::bigint AS index_bytes
       FROM (SELECT relid FROM pg_partition_tree(c.oid) WHERE isleaf
              UNION SELECT c.oid WHERE c.relkind <> 'p') p
       JOIN pg_class l ON l.oid = p.relid
      WHERE l.relkind IN ('r', 'm')
 ) leaves
 WHERE c.oid = %(oid)s::bigint::oid
