-- Heaps and their TOAST relations, catalog and cumulative statistics. 18 adds
-- pg_class.relallfrozen and pg_stat_all_tables.total_(auto)vacuum/analyze_time.
WITH locked AS (
    -- Sizing a relation takes ACCESS SHARE; skip those held in ACCESS EXCLUSIVE rather than wait.
    SELECT DISTINCT relation AS oid
      FROM pg_locks
     WHERE locktype = 'relation' AND mode = 'AccessExclusiveLock' AND granted
       AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
), heaps AS (
    SELECT c.oid, NULL::oid AS toast_of
      FROM pg_class c
      JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE c.relkind IN ('r', 'm') AND c.relpersistence <> 't'
       AND n.nspname NOT IN ('pg_catalog', 'information_schema')
       AND n.nspname !~ '^pg_toast'
), rels AS (
    SELECT * FROM heaps
    UNION ALL
    SELECT c.reltoastrelid, h.oid FROM heaps h JOIN pg_class c ON c.oid = h.oid
     WHERE c.reltoastrelid <> 0
), indexes AS (
    SELECT i.indrelid AS oid, count(*) AS n,
           (sum(pg_relation_size(i.indexrelid)) FILTER (WHERE l.oid IS NULL))::bigint AS bytes,
           bool_or(l.oid IS NOT NULL) AS any_locked
      FROM pg_index i
      JOIN rels r ON r.oid = i.indrelid
      LEFT JOIN locked l ON l.oid = i.indexrelid
     GROUP BY i.indrelid
), sized AS (
    SELECT r.oid, r.toast_of,
           CASE WHEN l.oid IS NULL THEN pg_relation_size(r.oid) END AS heap_bytes,
           CASE WHEN NOT coalesce(ix.any_locked, false) THEN coalesce(ix.bytes, 0) END
               AS index_bytes,
           coalesce(ix.n, 0)::int AS n_indexes
      FROM rels r
      LEFT JOIN locked l ON l.oid = r.oid
      LEFT JOIN indexes ix ON ix.oid = r.oid
), totals AS (
    -- A heap's TOAST bytes, joined here on narrow rows rather than beside the statistics.
    SELECT z.*, t.heap_bytes + t.index_bytes AS toast_bytes
      FROM sized z
      LEFT JOIN sized t ON t.toast_of = z.oid
)
-- No ORDER BY: 20,000 wide rows spill a sort to disk; collect/snapshot.py sorts them.
SELECT c.oid::bigint AS oid, n.nspname AS schema_name, c.relname AS name, c.relkind AS kind,
       z.toast_of::bigint AS toast_of,
       c.reltuples::float8 AS reltuples, c.relpages::bigint AS relpages,
       c.relallvisible::bigint AS relallvisible, c.relallfrozen::bigint AS relallfrozen,
       s.n_live_tup, s.n_dead_tup, s.n_ins_since_vacuum, s.n_mod_since_analyze,
       s.n_tup_ins, s.n_tup_upd, s.n_tup_del, s.n_tup_hot_upd, s.n_tup_newpage_upd,
       s.last_vacuum, s.last_autovacuum, s.last_analyze, s.last_autoanalyze,
       s.vacuum_count, s.autovacuum_count, s.analyze_count, s.autoanalyze_count,
       s.total_vacuum_time AS total_vacuum_time_ms,
       s.total_autovacuum_time AS total_autovacuum_time_ms,
       s.total_analyze_time AS total_analyze_time_ms,
       s.total_autoanalyze_time AS total_autoanalyze_time_ms,
       z.heap_bytes, z.index_bytes,
       z.toast_bytes,
       z.n_indexes,
       c.reloptions,
       age(c.relfrozenxid) AS frozenxid_age, mxid_age(c.relminmxid) AS minmxid_age
  FROM totals z
  JOIN pg_class c ON c.oid = z.oid
  JOIN pg_namespace n ON n.oid = c.relnamespace
  LEFT JOIN pg_stat_all_tables s ON s.relid = c.oid
