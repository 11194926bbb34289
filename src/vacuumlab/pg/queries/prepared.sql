-- Prepared transactions: each holds the horizon until COMMIT/ROLLBACK PREPARED (13+).
SELECT gid, transaction::text::bigint AS xid, age(transaction) AS xid_age, prepared,
       owner, database
  FROM pg_prepared_xacts
 ORDER BY age(transaction) DESC
