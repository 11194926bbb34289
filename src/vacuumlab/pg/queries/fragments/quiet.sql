-- The tables question's filter for a live view of a large database (watch/quiet.py): only
-- the tables that something moves toward autovacuum, judged from the catalog and the
-- statistics before any row is made, heap c and its TOAST relation together. A dead tuple,
-- an insert or a change counted; options; an age past quiet_xid or quiet_mxid (the freeze
-- limit less what the view's horizon consumes); a vacuum or analyze in the last ``window``
-- seconds (the counters it reset moved since the previous refresh); a vacuum running now;
-- and the table holding the oldest relation of each age, for wraparound. The rest are
-- counted by relation_count.sql. Filled into tables.sql only for such a view, so that no
-- other snapshot pays for it, whatever plan the server keeps.
AND (pg_stat_get_dead_tuples(c.oid) <> 0
     OR pg_stat_get_ins_since_vacuum(c.oid) <> 0
     OR pg_stat_get_mod_since_analyze(c.oid) <> 0
     OR pg_stat_get_dead_tuples(c.reltoastrelid) <> 0
     OR pg_stat_get_ins_since_vacuum(c.reltoastrelid) <> 0
     OR c.reloptions IS NOT NULL
     OR age(c.relfrozenxid) > %(quiet_xid)s
     OR mxid_age(c.relminmxid) > %(quiet_mxid)s
     OR greatest(pg_stat_get_last_vacuum_time(c.oid),
                 pg_stat_get_last_autovacuum_time(c.oid),
                 pg_stat_get_last_analyze_time(c.oid),
                 pg_stat_get_last_autoanalyze_time(c.oid),
                 pg_stat_get_last_vacuum_time(c.reltoastrelid),
                 pg_stat_get_last_autovacuum_time(c.reltoastrelid))
        > statement_timestamp() - make_interval(secs => %(window)s)
     OR EXISTS (SELECT FROM pg_class t
                 WHERE t.oid = c.reltoastrelid
                   AND (t.reloptions IS NOT NULL
                        OR age(t.relfrozenxid) > %(quiet_xid)s
                        OR mxid_age(t.relminmxid) > %(quiet_mxid)s))
     OR EXISTS (SELECT FROM pg_stat_progress_vacuum v WHERE v.relid IN (c.oid, c.reltoastrelid))
     OR c.oid IN (SELECT o.oid FROM pg_class o
                    JOIN pg_namespace on_ ON on_.oid = o.relnamespace
                    LEFT JOIN pg_class ot ON ot.oid = o.reltoastrelid
                   WHERE o.relkind IN ('r', 'm') AND o.relpersistence <> 't'
                     AND on_.nspname NOT IN ('pg_catalog', 'information_schema')
                   ORDER BY greatest(age(o.relfrozenxid), coalesce(age(ot.relfrozenxid), 0)) DESC, o.oid
                   LIMIT 1)
     OR c.oid IN (SELECT o.oid FROM pg_class o
                    JOIN pg_namespace on_ ON on_.oid = o.relnamespace
                    LEFT JOIN pg_class ot ON ot.oid = o.reltoastrelid
                   WHERE o.relkind IN ('r', 'm') AND o.relpersistence <> 't'
                     AND on_.nspname NOT IN ('pg_catalog', 'information_schema')
                   ORDER BY greatest(mxid_age(o.relminmxid), coalesce(mxid_age(ot.relminmxid), 0)) DESC,
                            o.oid
                   LIMIT 1))
