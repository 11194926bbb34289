-- A captured table's columns (13+), and from pg_stats what their values look like without a
-- single value: never most_common_vals, histogram_bounds nor any other column of values.
-- pg_stats shows only the columns the role may SELECT (and none under row security it is
-- subject to): readable says which, so a missing row is told apart from a table that was
-- never analyzed. inherited: a partitioned table's statistics are over its partitions.
-- compression: pg_attribute.attcompression, which 14 adds (a fragment).
SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type,
       a.attnotnull AS not_null, pg_get_expr(d.adbin, d.adrelid) AS "default",
       nullif(a.attidentity::text, '') AS identity,
       nullif(a.attgenerated::text, '') AS generated,
       a.attstorage::text AS storage, {compression:a} AS compression,
       has_column_privilege(a.attrelid, a.attnum, 'SELECT') AS readable,
       s.null_frac::float8 AS null_frac, s.avg_width, s.n_distinct::float8 AS n_distinct,
       s.correlation::float8 AS correlation
  FROM pg_attribute a
  JOIN pg_class c ON c.oid = a.attrelid
  JOIN pg_namespace n ON n.oid = c.relnamespace
  LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
  LEFT JOIN pg_stats s
         ON s.schemaname = n.nspname AND s.tablename = c.relname AND s.attname = a.attname
        AND s.inherited = (c.relkind = 'p')
 WHERE a.attrelid = %(oid)s::bigint::oid AND a.attnum > 0 AND NOT a.attisdropped
 ORDER BY a.attnum
