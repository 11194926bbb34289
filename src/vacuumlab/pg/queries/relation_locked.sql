-- Whether a backend holds a granted lock on a relation (pg_locks, 13+): no row when not.
SELECT true AS granted
  FROM pg_locks
 WHERE pid = %(pid)s AND relation = %(relid)s::bigint::oid AND granted
 LIMIT 1
