-- The named settings as the server shows them (SHOW, current_setting): "128MB", not the
-- raw 16384 of pg_settings with its unit apart (13+).
SELECT name, current_setting(name) AS value
  FROM unnest(%(names)s::text[]) AS name
