-- The databases advise and snapshot --all-databases visit (13+): every one that accepts
-- connections and is not a template. datconnlimit is left to the connection itself: a
-- database at its limit becomes a note, as one the role may not connect to does.
SELECT datname AS name
  FROM pg_database
 WHERE datallowconn AND NOT datistemplate
 ORDER BY datname
