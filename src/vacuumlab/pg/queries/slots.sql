-- Replication slots and the horizons they pin (13+).
SELECT slot_name, slot_type, database, active,
       xmin::text::bigint AS xmin, age(xmin) AS xmin_age,
       catalog_xmin::text::bigint AS catalog_xmin, age(catalog_xmin) AS catalog_xmin_age
  FROM pg_replication_slots
 ORDER BY slot_name
