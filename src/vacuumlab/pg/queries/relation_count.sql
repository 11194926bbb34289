-- How many heap and TOAST relations the tables question would list (tables.sql, without its
-- quiet filter): a live view of a large database asks that question for the tables that
-- something moves (fragments/quiet.sql) and counts the rest from this.
SELECT count(*) + count(*) FILTER (WHERE c.reltoastrelid <> 0) AS relations
  FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE c.relkind IN ('r', 'm') AND c.relpersistence <> 't'
   AND n.nspname NOT IN ('pg_catalog', 'information_schema')
   AND n.nspname !~ '^pg_toast'
