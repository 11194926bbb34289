-- The row counters of captured tables (13+), summed over a partitioned table's leaves (its
-- own are zero; pg_partition_tree() has no row for a table outside a partition tree: such a
-- table is its own only leaf). n_tup_newpage_upd: 16 adds it, NULL
-- before (a fragment).
SELECT t.oid::bigint AS relid,
       sum(s.n_tup_ins)::bigint AS inserts, sum(s.n_tup_upd)::bigint AS updates,
       sum(s.n_tup_hot_upd)::bigint AS hot_updates,
       sum({newpage_updated:c})::bigint AS newpage_updates,
       sum(s.n_tup_del)::bigint AS deletes, sum(s.n_dead_tup)::bigint AS dead_tuples,
       sum(s.autovacuum_count)::bigint AS autovacuums,
       sum(s.autoanalyze_count)::bigint AS autoanalyzes
  FROM unnest(%(oids)s::bigint[]) AS t(oid)
 CROSS JOIN LATERAL (SELECT relid FROM pg_partition_tree(t.oid::oid) WHERE isleaf
                     UNION SELECT t.oid::oid) p
  JOIN pg_class c ON c.oid = p.relid
  JOIN pg_stat_all_tables s ON s.relid = p.relid
 WHERE c.relkind <> 'p'
 GROUP BY t.oid
