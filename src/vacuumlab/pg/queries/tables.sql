-- Heaps and their TOAST relations, catalog and cumulative statistics (13+). The columns
-- later versions add are version fragments, in braces: a fragment's name, a colon and the
-- relation it reads. queries.get() fills each from fragments/<name>*.sql as the server's
-- version has it, NULL before: 16 adds pg_stat_all_tables.n_tup_newpage_upd, 18
-- pg_class.relallfrozen and pg_stat_all_tables.total_(auto)vacuum/analyze_time.
-- The statistics come from the functions behind pg_stat_all_tables: the view also sums every
-- index's scans per table, a grouping over pg_index that nothing here reads.
--
-- The rows are computed one relation at a time, each sized in a LATERAL subquery, with no
-- sort or grouping over the whole set: the first rows leave the server within milliseconds,
-- and the client validates them while the server works on the rest (collect/snapshot.py
-- streams the statement in chunks). At 10,000 tables the first row came after 0.03 s, where
-- grouping the sizes over every relation first kept it back for 0.15 s. The TOAST relations
-- come first, and toast_bytes is the client's to fill in: a table's TOAST relation's heap
-- and index bytes, from the TOAST relation's own row.
--
-- With measure false (the live view's refreshes, watch/source.py): every size is relpages ×
-- block size, as of the relation's last vacuum, analyze or index build, and nothing is
-- opened. autovacuum itself decides from pg_class and the statistics alone
-- (relation_needs_vacanalyze() in autovacuum.c).
--
-- With parts 2, the question is asked in two halves, part 0 and part 1, on two sessions at
-- once (collect/snapshot.py): each table and its TOAST relation fall in the same half, by a
-- hash of the table's oid.
--
-- The sizes (the last line, in braces) are the same in every version:
-- queries/fragments/sizes.sql sizes each relation and its indexes in LATERAL subqueries, by
-- pg_relation_size() or, for a role allowed to call pg_stat_file(), by the size of the
-- relation's file read without opening it (collect/snapshot.py fills them in).
-- catalog_position is the place of the relation's pg_class row (block × 65536 + line): a
-- worker lists the relations to vacuum in the order its scan of pg_class meets them
-- (do_autovacuum() in autovacuum.c), which is this one, not the oids'.
WITH locked AS (
    -- Sizing a relation takes ACCESS SHARE; skip those held in ACCESS EXCLUSIVE rather than wait.
    SELECT DISTINCT relation AS oid
      FROM pg_locks
     WHERE locktype = 'relation' AND mode = 'AccessExclusiveLock' AND granted
       AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
), heaps AS (
    SELECT c.oid, c.relname, c.relnamespace, c.relkind, c.reltuples, c.relpages,
           c.relallvisible, {relallfrozen:c}, c.reloptions, c.relfrozenxid,
           c.relminmxid, c.reltablespace, c.relfilenode, c.reltoastrelid, c.ctid AS catalog_tid
      FROM pg_class c
      JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE c.relkind IN ('r', 'm') AND c.relpersistence <> 't'
       AND n.nspname NOT IN ('pg_catalog', 'information_schema')
       AND n.nspname !~ '^pg_toast'
       -- Part ``part`` of ``parts`` (0 of 1: all), each table with its TOAST relation.
       AND mod(hashoid(c.oid)::bigint + 2147483648, %(parts)s) = %(part)s
       -- With quiet (a live view of a large database): fragments/quiet.sql, else nothing.
       {quiet}
), listed AS (
    -- Each branch takes every column from its own scan, so that no join later reorders the
    -- rows: the TOAST relations (the first branch) come first.
    SELECT t.oid, t.relname, t.relnamespace, t.relkind, t.reltuples, t.relpages,
           t.relallvisible, {relallfrozen:t}, t.reloptions, t.relfrozenxid,
           t.relminmxid, t.reltablespace, t.relfilenode, h.oid AS toast_of, t.ctid AS catalog_tid
      FROM heaps h
      JOIN pg_class t ON t.oid = h.reltoastrelid
    UNION ALL
    SELECT oid, relname, relnamespace, relkind, reltuples, relpages,
           relallvisible, relallfrozen, reloptions, relfrozenxid, relminmxid,
           reltablespace, relfilenode, NULL::oid, catalog_tid
      FROM heaps
)
-- No ORDER BY: collect/snapshot.py sorts the tables.
SELECT c.oid::bigint AS oid, n.nspname AS schema_name, c.relname AS name, c.relkind AS kind,
       c.toast_of::bigint AS toast_of,
       c.reltuples::float8 AS reltuples, c.relpages::bigint AS relpages,
       c.relallvisible::bigint AS relallvisible, c.relallfrozen::bigint AS relallfrozen,
       pg_stat_get_live_tuples(c.oid) AS n_live_tup,
       pg_stat_get_dead_tuples(c.oid) AS n_dead_tup,
       pg_stat_get_ins_since_vacuum(c.oid) AS n_ins_since_vacuum,
       pg_stat_get_mod_since_analyze(c.oid) AS n_mod_since_analyze,
       pg_stat_get_tuples_inserted(c.oid) AS n_tup_ins,
       pg_stat_get_tuples_updated(c.oid) AS n_tup_upd,
       pg_stat_get_tuples_deleted(c.oid) AS n_tup_del,
       pg_stat_get_tuples_hot_updated(c.oid) AS n_tup_hot_upd,
       {newpage_updated:c} AS n_tup_newpage_upd,
       pg_stat_get_last_vacuum_time(c.oid) AS last_vacuum,
       pg_stat_get_last_autovacuum_time(c.oid) AS last_autovacuum,
       pg_stat_get_last_analyze_time(c.oid) AS last_analyze,
       pg_stat_get_last_autoanalyze_time(c.oid) AS last_autoanalyze,
       pg_stat_get_vacuum_count(c.oid) AS vacuum_count,
       pg_stat_get_autovacuum_count(c.oid) AS autovacuum_count,
       pg_stat_get_analyze_count(c.oid) AS analyze_count,
       pg_stat_get_autoanalyze_count(c.oid) AS autoanalyze_count,
       {vacuum_times:c},
       h.bytes AS heap_bytes,
       CASE WHEN NOT coalesce(ix.any_locked, false) THEN coalesce(ix.bytes, 0) END AS index_bytes,
       NULL::bigint AS toast_bytes, ix.n AS n_indexes,
       c.reloptions,
       ((c.catalog_tid::text::point)[0] * 65536 + (c.catalog_tid::text::point)[1])::bigint
           AS catalog_position,
       age(c.relfrozenxid) AS frozenxid_age, mxid_age(c.relminmxid) AS minmxid_age
  FROM listed c
  JOIN pg_namespace n ON n.oid = c.relnamespace
  LEFT JOIN locked l ON l.oid = c.oid
  {sizes}
