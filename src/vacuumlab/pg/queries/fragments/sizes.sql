-- The tables question's sizes, the same in every version (tables.sql): relation c's
-- main fork as h.bytes, and as ix its indexes' count, bytes and whether any was locked. The
-- two expressions in braces measure relation c and index i_c (collect/snapshot.py fills them
-- in from file_bytes.sql or relation_bytes.sql); with measure false every size is relpages ×
-- block size and nothing is opened.
--
-- pg_relation_size() opens the relation: at 40,000 relations, building their relcache
-- entries is most of the tables question's time. The indexes of an empty heap or TOAST
-- relation that no vacuum or analyze has seen (reltuples -1, 14+) are as they were built:
-- nothing can have been inserted into them without leaving a page in their relation, and
-- only a vacuum, which sets reltuples, takes its pages away (lazy_truncate_heap() in
-- vacuumlazy.c). Their pg_class.relpages holds the size they were built with
-- (index_update_stats() in index.c) when their reltuples is set; an index TRUNCATE or
-- REINDEX rebuilt on an empty table keeps -1 and relpages 0 (18), and is measured.
  CROSS JOIN LATERAL (
      SELECT CASE WHEN NOT %(measure)s
                  THEN c.relpages::bigint * (SELECT current_setting('block_size')::bigint)
                  WHEN l.oid IS NULL THEN {heap_bytes} END AS bytes
  ) h
  CROSS JOIN LATERAL (
      SELECT count(*)::int AS n,
             (sum(CASE WHEN NOT %(measure)s
                            OR (h.bytes = 0 AND c.reltuples < 0 AND i_c.reltuples >= 0)
                       THEN i_c.relpages::bigint * (SELECT current_setting('block_size')::bigint)
                       ELSE {index_bytes} END)
                  FILTER (WHERE li.oid IS NULL OR NOT %(measure)s))::bigint AS bytes,
             bool_or(li.oid IS NOT NULL AND %(measure)s) AS any_locked
        FROM pg_index i
        JOIN pg_class i_c ON i_c.oid = i.indexrelid
        LEFT JOIN locked li ON li.oid = i.indexrelid
       WHERE i.indrelid = c.oid
  ) ix
