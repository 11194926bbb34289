-- Relation {rel}'s main fork in bytes, as pg_relation_size() measures it (any role): it opens
-- the relation, which builds its relcache entry and takes ACCESS SHARE.
pg_relation_size({rel}.oid)
