-- How the server stores pages and values and how much it caches (13+; no
-- default_toast_compression before 14): page size, data checksums, shared_buffers in bytes.
SELECT current_setting('block_size')::int AS block_size,
       current_setting('data_checksums') AS data_checksums,
       NULL::text AS default_toast_compression,
       pg_size_bytes(current_setting('shared_buffers')) AS shared_buffers_bytes
