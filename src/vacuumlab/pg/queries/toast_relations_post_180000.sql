-- 18 adds pg_class.relallfrozen: the pages the visibility map marks all-frozen.
SELECT r.part, c.oid::bigint AS oid, n.nspname AS schema_name, c.relname AS name,
       pg_relation_size(c.oid) AS bytes, c.relpages::bigint AS relpages,
       c.relallvisible::bigint AS relallvisible, c.relallfrozen::bigint AS relallfrozen,
       s.n_live_tup, s.n_dead_tup, age(c.relfrozenxid)::bigint AS frozenxid_age,
       array_to_string(c.reloptions, ',') AS reloptions
  FROM (SELECT 'heap' AS part, %(relid)s::bigint::oid AS oid
        UNION ALL
        SELECT 'toast', reltoastrelid FROM pg_class
         WHERE oid = %(relid)s::bigint::oid AND reltoastrelid <> 0) AS r
  JOIN pg_class c ON c.oid = r.oid
  JOIN pg_namespace n ON n.oid = c.relnamespace
  LEFT JOIN pg_stat_all_tables s ON s.relid = c.oid
 ORDER BY r.part
