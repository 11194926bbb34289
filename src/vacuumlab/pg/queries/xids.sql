-- The next transaction id, read from a snapshot so that no xid is assigned (13+).
SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS next_xid
