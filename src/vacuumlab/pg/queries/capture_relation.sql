-- A table named as SQL writes it (app."Job Queue", or unqualified along the search path),
-- resolved on the server (13+): parse_ident() splits and unquotes the name as the parser
-- does, the catalogs find it. Not to_regclass(): a schema the role has no USAGE on would
-- raise, and pg_monitor needs none to read the catalogs. A three-part name must name this
-- database. No row: no such relation.
WITH name AS (
    SELECT parse_ident(%(relation)s) AS parts
)
SELECT c.oid::bigint AS oid, n.nspname AS schema_name, c.relname AS name,
       c.relkind::text AS relkind
  FROM name
  JOIN pg_class c ON c.relname = name.parts[cardinality(name.parts)]
  JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE CASE cardinality(name.parts)
       WHEN 1 THEN n.nspname = ANY(current_schemas(true))
       WHEN 2 THEN n.nspname = name.parts[1]
       WHEN 3 THEN n.nspname = name.parts[2] AND name.parts[1] = current_database()
       ELSE false END
 ORDER BY array_position(current_schemas(true)::text[], n.nspname::text)
 LIMIT 1
