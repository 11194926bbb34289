-- Partitioned tables (relkind p), each with the leaf partitions of its whole tree (14+).
-- autovacuum never analyzes a partitioned table: do_autovacuum() in autovacuum.c lists only
-- plain tables, materialized views and TOAST relations. Its own statistics, over every
-- partition, come from a manual ANALYZE alone, which sets its reltuples (-1 before: from 14)
-- and, from 14, its last_analyze (analyze.c reports a partitioned table's inherited ANALYZE).
-- On 13 neither tells an analyzed partitioned table from one never analyzed: no file.
-- The tree is walked in pg_inherits, which takes no lock (pg_partition_tree() locks every
-- partition); a partition held in ACCESS EXCLUSIVE does not make the advisor wait.
WITH RECURSIVE parents AS (
    SELECT c.oid, n.nspname, c.relname, c.reltuples
      FROM pg_class c
      JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE c.relkind = 'p'
       AND n.nspname NOT IN ('pg_catalog', 'information_schema')
), tree AS (
    SELECT p.oid AS root, i.inhrelid AS relid
      FROM parents p
      JOIN pg_inherits i ON i.inhparent = p.oid
    UNION ALL
    SELECT t.root, i.inhrelid
      FROM tree t
      JOIN pg_inherits i ON i.inhparent = t.relid
), leaves AS (
    SELECT t.root, array_agg(t.relid::bigint ORDER BY t.relid) AS leaves
      FROM tree t
      JOIN pg_class l ON l.oid = t.relid
     WHERE l.relkind = 'r'
     GROUP BY t.root
)
SELECT p.oid::bigint AS oid, p.nspname AS schema_name, p.relname AS name,
       p.reltuples::float8 AS reltuples,
       pg_stat_get_last_analyze_time(p.oid) AS last_analyze,
       pg_stat_get_analyze_count(p.oid) AS analyze_count,
       up.inhparent::bigint AS parent,
       coalesce(l.leaves, '{}') AS leaves
  FROM parents p
  LEFT JOIN pg_inherits up ON up.inhrelid = p.oid
  LEFT JOIN leaves l ON l.root = p.oid
