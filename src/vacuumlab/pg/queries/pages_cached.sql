-- How many of each relation's main-fork pages, and of its indexes', sit in shared buffers now,
-- from pg_buffercache ({schema} is the extension's; 1.2+ on 10+ grants it to pg_monitor).
-- The view walks every buffer header once (pg_buffercache_pages() in pg_buffercache_pages.c):
-- one statement for all the relations. Buffers are matched on the relation's file node in the
-- current database and its tablespace (0 in pg_class is the database's default).
WITH db AS (
    SELECT oid, dattablespace FROM pg_catalog.pg_database WHERE datname = current_database()
), rels AS (
    SELECT c.oid AS owner, c.oid AS rel, false AS is_index
      FROM unnest(%(oids)s::oid[]) AS r(oid)
      JOIN pg_catalog.pg_class c ON c.oid = r.oid
    UNION ALL
    SELECT i.indrelid, i.indexrelid, true
      FROM pg_catalog.pg_index i
     WHERE i.indrelid = ANY (%(oids)s::oid[])
), nodes AS (
    SELECT r.owner, r.is_index, pg_catalog.pg_relation_filenode(r.rel) AS node,
           coalesce(nullif(c.reltablespace, 0), db.dattablespace) AS space
      FROM rels r
      JOIN pg_catalog.pg_class c ON c.oid = r.rel
     CROSS JOIN db
)
SELECT n.owner AS oid,
       count(b.relfilenode) FILTER (WHERE NOT n.is_index) AS heap,
       count(b.relfilenode) FILTER (WHERE n.is_index) AS indexes
  FROM nodes n
  LEFT JOIN {schema}.pg_buffercache b
    ON b.relfilenode = n.node AND b.reltablespace = n.space AND b.relforknumber = 0
   AND b.reldatabase = (SELECT oid FROM db)
 GROUP BY n.owner
