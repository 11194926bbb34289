-- pg_attribute.attcompression of column {rel} (14+): empty for the server's default.
nullif({rel}.attcompression::text, '')
