-- One relation by name: its oid and its main fork's size in bytes (13+). Raises when it does
-- not exist, as a study's own table always does.
SELECT %(relation)s::regclass::oid::bigint AS oid, pg_relation_size(%(relation)s::regclass) AS bytes
