-- The row counters of captured tables (13+), one row per leaf: a partitioned table's own are
-- zero, its leaves' are summed by the client (collect/capture.py), over the leaves present at
-- both ends of the window, so that a partition attached or detached during it adds no rate.
-- pg_partition_tree() has no row for a table outside a partition tree: such a table is its
-- own only leaf. n_tup_newpage_upd: 16 adds it, NULL before (a fragment).
SELECT t.oid::bigint AS relid, p.relid::bigint AS leaf,
       s.n_tup_ins AS inserts, s.n_tup_upd AS updates,
       s.n_tup_hot_upd AS hot_updates,
       {newpage_updated:c} AS newpage_updates,
       s.n_tup_del AS deletes, s.n_dead_tup AS dead_tuples,
       s.autovacuum_count AS autovacuums,
       s.autoanalyze_count AS autoanalyzes
  FROM unnest(%(oids)s::bigint[]) AS t(oid)
 CROSS JOIN LATERAL (SELECT relid FROM pg_partition_tree(t.oid::oid) WHERE isleaf
                     UNION SELECT t.oid::oid) p
  JOIN pg_class c ON c.oid = p.relid
  JOIN pg_stat_all_tables s ON s.relid = p.relid
 WHERE c.relkind <> 'p'
