-- The current WAL insert position, and the bytes written since an earlier one (13+; zero
-- when none is given).
SELECT pg_current_wal_lsn()::text AS lsn,
       pg_wal_lsn_diff(pg_current_wal_lsn(),
                       coalesce(%(since)s::pg_lsn, pg_current_wal_lsn()))::bigint AS bytes_since
