-- Dead rows and free space of one relation, measured (pgstattuple's pgstattuple_approx): it
-- reads every page that is not all-visible, so it is asked table by table, only on request.
SELECT %(relid)s::bigint AS oid, a.table_len, a.scanned_percent, a.approx_tuple_count,
       a.approx_tuple_len, a.approx_tuple_percent, a.dead_tuple_count, a.dead_tuple_len,
       a.dead_tuple_percent, a.approx_free_space, a.approx_free_percent
  FROM pgstattuple_approx(%(relid)s::bigint::oid::regclass) AS a
