-- What the capture session needs to know of its server (13+): which statements
-- pg_stat_statements sees (track: top, the default, misses those run inside functions and
-- DO blocks; NULL when the library is not loaded), the search path along which statements'
-- unqualified table names are matched, and the block size.
SELECT current_setting('pg_stat_statements.track', true) AS track,
       current_schemas(true)::text[] AS search_path,
       current_setting('block_size')::int AS block_size
