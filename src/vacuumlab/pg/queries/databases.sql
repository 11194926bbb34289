-- Freeze ages of every database, for wraparound (13+).
SELECT datname AS name, age(datfrozenxid) AS frozenxid_age, mxid_age(datminmxid) AS minmxid_age,
       datallowconn AS allow_connections
  FROM pg_database
 ORDER BY datname
