-- 14 adds default_toast_compression: the method new TOAST values are compressed with.
SELECT current_setting('block_size')::int AS block_size,
       current_setting('data_checksums') AS data_checksums,
       current_setting('default_toast_compression') AS default_toast_compression,
       pg_size_bytes(current_setting('shared_buffers')) AS shared_buffers_bytes
