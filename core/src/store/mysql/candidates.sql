-- The candidate rows of an acquisition (see CANDIDATES_SQL in mysql.rs). Parameters, in order: the namespace
-- and owner key; the namespace and owner key; the namespace, preferred slot and hinted unused slot; the
-- namespace; the namespace and now + tolerance; the namespace and now; the namespace, now and now + tolerance;
-- the namespace.
SELECT * FROM (SELECT slot, owner_key, incarnation, last_owner_key, fence, expires_at, floor, ceiling, next_floor
    FROM cosid_slot WHERE namespace = ? AND owner_key = ?) a
UNION ALL SELECT * FROM (SELECT slot, owner_key, incarnation, last_owner_key, fence, expires_at, floor, ceiling,
    next_floor FROM cosid_slot WHERE namespace = ? AND last_owner_key = ?) b
UNION ALL SELECT * FROM (SELECT slot, owner_key, incarnation, last_owner_key, fence, expires_at, floor, ceiling,
    next_floor FROM cosid_slot WHERE namespace = ? AND slot IN (?, ?)) c
UNION ALL SELECT * FROM (SELECT slot, owner_key, incarnation, last_owner_key, fence, expires_at, floor, ceiling,
    next_floor FROM cosid_slot WHERE namespace = ? AND incarnation IS NULL ORDER BY slot LIMIT 1) d
UNION ALL SELECT * FROM (SELECT slot, owner_key, incarnation, last_owner_key, fence, expires_at, floor, ceiling,
    next_floor FROM cosid_slot WHERE namespace = ? AND incarnation IS NULL AND next_floor <= ?
    ORDER BY slot LIMIT 1) e
UNION ALL SELECT * FROM (SELECT slot, owner_key, incarnation, last_owner_key, fence, expires_at, floor, ceiling,
    next_floor FROM cosid_slot WHERE namespace = ? AND held_until < ? ORDER BY slot LIMIT 1) f
UNION ALL SELECT * FROM (SELECT slot, owner_key, incarnation, last_owner_key, fence, expires_at, floor, ceiling,
    next_floor FROM cosid_slot WHERE namespace = ? AND held_until < ? AND next_floor <= ?
    ORDER BY slot LIMIT 1) g
UNION ALL SELECT * FROM (SELECT slot, owner_key, incarnation, last_owner_key, fence, expires_at, floor, ceiling,
    next_floor FROM cosid_slot WHERE namespace = ? AND held_until IS NOT NULL ORDER BY held_until LIMIT 1) h
