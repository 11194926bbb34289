-- The storage options of named tables of one schema and of their TOAST relations (13+): what
-- a study's step runs with, the heap's own and the TOAST relation's (ALTER TABLE's toast.*).
SELECT c.relname AS name,
       coalesce(c.reloptions, '{}') AS heap_options,
       coalesce(t.reloptions, '{}') AS toast_options
  FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace
  LEFT JOIN pg_class t ON t.oid = c.reltoastrelid
 WHERE n.nspname = %(schema)s AND c.relname = ANY(%(tables)s::text[])
 ORDER BY c.relname
