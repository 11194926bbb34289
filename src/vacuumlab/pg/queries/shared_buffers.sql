-- shared_buffers in bytes, whatever unit it was set in (13+).
SELECT pg_size_bytes(current_setting('shared_buffers')) AS bytes
