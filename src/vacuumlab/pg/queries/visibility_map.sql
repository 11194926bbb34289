-- A relation's pages the visibility map marks all-visible and all-frozen (pg_visibility, 13+),
-- from the schema the caller names for the extension.
SELECT all_visible, all_frozen
  FROM {schema}.pg_visibility_map_summary(%(relid)s::bigint::oid)
