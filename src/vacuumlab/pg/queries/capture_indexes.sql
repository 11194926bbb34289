-- A captured table's indexes (13+). columns: every column the index covers, key and INCLUDE
-- columns (indkey) and those its expressions and predicate read, which index_create()
-- (index.c) records in pg_depend against the table's columns. An UPDATE of any of them is
-- not HOT (heap_update() in heapam.c compares the indexed attributes).
SELECT ic.relname AS name, pg_get_indexdef(i.indexrelid) AS definition,
       ARRAY(SELECT a.attname::text
               FROM pg_attribute a
              WHERE a.attrelid = i.indrelid AND a.attnum > 0 AND NOT a.attisdropped
                AND (a.attnum = ANY(i.indkey)
                     OR a.attnum IN (SELECT dep.refobjsubid
                                       FROM pg_depend dep
                                      WHERE dep.classid = 'pg_class'::regclass
                                        AND dep.objid = i.indexrelid
                                        AND dep.refclassid = 'pg_class'::regclass
                                        AND dep.refobjid = i.indrelid))
              ORDER BY a.attnum) AS columns,
       i.indisunique AS "unique", i.indisprimary AS "primary", am.amname AS method,
       0 = ANY(i.indkey) AS expression,
       pg_get_expr(i.indpred, i.indrelid) AS predicate,
       pg_relation_size(i.indexrelid) AS bytes
  FROM pg_index i
  JOIN pg_class ic ON ic.oid = i.indexrelid
  JOIN pg_am am ON am.oid = ic.relam
 WHERE i.indrelid = %(oid)s::bigint::oid
 ORDER BY ic.relname
