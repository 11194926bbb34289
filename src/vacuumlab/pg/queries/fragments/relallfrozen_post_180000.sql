-- pg_class.relallfrozen of relation {rel} (18+).
{rel}.relallfrozen
