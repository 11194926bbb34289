-- The storage options of tables and their TOAST relations (13+), as ALTER TABLE … SET left
-- them: the heap's own, and the TOAST relation's (which ALTER TABLE names toast.*).
SELECT c.oid::bigint AS oid,
       coalesce(c.reloptions, '{}') AS heap_options,
       coalesce(t.reloptions, '{}') AS toast_options
  FROM pg_class c
  LEFT JOIN pg_class t ON t.oid = c.reltoastrelid
 WHERE c.oid = ANY(%(oids)s::bigint[]::oid[])
