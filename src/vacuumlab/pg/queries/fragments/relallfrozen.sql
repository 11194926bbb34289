-- pg_class.relallfrozen of relation {rel}, which 18 adds: before, unknown.
NULL::integer AS relallfrozen
