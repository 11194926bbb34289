-- The heap pages the next vacuum of each relation reads, from its visibility map (pg_visibility
-- 1.1+, 9.6+; {schema} is the extension's). A vacuum skips only runs of at least 32 skippable
-- pages and always reads the last page (heap_vac_scan_next_block() and
-- find_next_unskippable_block() in vacuumlazy.c): the pages it must read are the unskippable
-- ones and the last; each gap before one of them is skipped when it is 32 pages or longer.
-- Skippable is all-visible for a normal vacuum, all-frozen for an aggressive one.
WITH blocks AS MATERIALIZED (
    SELECT r.oid, m.blkno, m.all_visible, m.all_frozen
      FROM unnest(%(oids)s::oid[]) AS r(oid)
      JOIN pg_catalog.pg_class c ON c.oid = r.oid
     CROSS JOIN LATERAL {schema}.pg_visibility_map(r.oid::regclass) AS m
), sizes AS (
    SELECT oid, count(*) AS pages, max(blkno) AS last,
           count(*) FILTER (WHERE all_visible) AS all_visible,
           count(*) FILTER (WHERE all_frozen) AS all_frozen
      FROM blocks
     GROUP BY oid
), normal AS (
    SELECT b.oid, b.blkno - lag(b.blkno, 1, -1::bigint) OVER w - 1 AS gap
      FROM blocks b
      JOIN sizes s USING (oid)
     WHERE NOT b.all_visible OR b.blkno = s.last
    WINDOW w AS (PARTITION BY b.oid ORDER BY b.blkno)
), aggressive AS (
    SELECT b.oid, b.blkno - lag(b.blkno, 1, -1::bigint) OVER w - 1 AS gap
      FROM blocks b
      JOIN sizes s USING (oid)
     WHERE NOT b.all_frozen OR b.blkno = s.last
    WINDOW w AS (PARTITION BY b.oid ORDER BY b.blkno)
), skipped AS (
    SELECT oid, sum(gap) FILTER (WHERE gap >= 32) AS normal, 0 AS aggressive FROM normal GROUP BY oid
    UNION ALL
    SELECT oid, 0, sum(gap) FILTER (WHERE gap >= 32) FROM aggressive GROUP BY oid
)
SELECT s.oid, s.pages, s.all_visible, s.all_frozen,
       s.pages - coalesce(sum(k.normal), 0) AS normal,
       s.pages - coalesce(sum(k.aggressive), 0) AS aggressive
  FROM sizes s
  LEFT JOIN skipped k USING (oid)
 GROUP BY s.oid, s.pages, s.all_visible, s.all_frozen
