-- pg_attribute.attcompression of column {rel}, which 14 adds: before, the server's default.
NULL::text
