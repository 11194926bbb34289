-- A captured table's constraints as ALTER TABLE … ADD would write them (13+; 18 adds its
-- NOT NULL constraints, kind n).
SELECT conname AS name, contype::text AS kind, pg_get_constraintdef(oid) AS definition
  FROM pg_constraint
 WHERE conrelid = %(oid)s::bigint::oid
 ORDER BY conname
