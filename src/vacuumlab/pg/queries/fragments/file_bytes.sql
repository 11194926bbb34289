-- Relation {rel}'s main fork in bytes, read from its first segment file with pg_stat_file(),
-- for a role allowed to call it: the same stat() that pg_relation_size() makes
-- (calculate_relation_size() in dbsize.c), without opening the relation, whose relcache entry
-- costs several times the stat() in a new session. pg_relation_size() measures instead a
-- relation whose first segment is full (it may have more: segment_size, 1 GB by default),
-- one outside the database's directory (another tablespace, or a mapped catalog), and one
-- whose file is gone (rewritten since this statement's catalog snapshot).
coalesce(CASE WHEN {rel}.reltablespace = 0 AND {rel}.relfilenode <> 0
              THEN nullif((pg_stat_file((SELECT 'base/' || d.oid || '/'
                                           FROM pg_database d
                                          WHERE d.datname = current_database()
                                            AND d.dattablespace = (SELECT oid FROM pg_tablespace
                                                                    WHERE spcname = 'pg_default'))
                                        || {rel}.relfilenode, true)).size,
                          (SELECT pg_size_bytes(current_setting('segment_size')))) END,
         pg_relation_size({rel}.oid))
