-- How the server stores pages and values (14+: default_toast_compression appears in 14):
-- page size, data checksums, the compression new TOAST values get.
SELECT current_setting('block_size')::int AS block_size,
       current_setting('data_checksums') AS data_checksums,
       current_setting('default_toast_compression') AS default_toast_compression
