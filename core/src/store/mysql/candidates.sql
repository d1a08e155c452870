-- The candidate rows of an acquisition (see CANDIDATES_SQL in mysql.rs). Parameters, in order: the namespace
-- and owner key; the namespace and owner key; the namespace, preferred slot and hinted unused slot; the
-- namespace; the namespace and now + tolerance; the namespace and now; the namespace, now and now + tolerance;
-- the namespace.
-- Each part is a parenthesized SELECT, not a derived table: MariaDB plans and runs it in half the time.
(SELECT slot, owner_key, incarnation, last_owner_key, fence, expires_at, floor, ceiling, next_floor
    FROM cosid_slot WHERE namespace = ? AND owner_key = ?)
UNION ALL (SELECT slot, owner_key, incarnation, last_owner_key, fence, expires_at, floor, ceiling,
    next_floor FROM cosid_slot WHERE namespace = ? AND last_owner_key = ?)
UNION ALL (SELECT slot, owner_key, incarnation, last_owner_key, fence, expires_at, floor, ceiling,
    next_floor FROM cosid_slot WHERE namespace = ? AND slot IN (?, ?))
UNION ALL (SELECT slot, owner_key, incarnation, last_owner_key, fence, expires_at, floor, ceiling,
    next_floor FROM cosid_slot WHERE namespace = ? AND incarnation IS NULL ORDER BY slot LIMIT 1)
UNION ALL (SELECT slot, owner_key, incarnation, last_owner_key, fence, expires_at, floor, ceiling,
    next_floor FROM cosid_slot WHERE namespace = ? AND incarnation IS NULL AND next_floor <= ?
    ORDER BY slot LIMIT 1)
UNION ALL (SELECT slot, owner_key, incarnation, last_owner_key, fence, expires_at, floor, ceiling,
    next_floor FROM cosid_slot WHERE namespace = ? AND held_until < ? ORDER BY slot LIMIT 1)
UNION ALL (SELECT slot, owner_key, incarnation, last_owner_key, fence, expires_at, floor, ceiling,
    next_floor FROM cosid_slot WHERE namespace = ? AND held_until < ? AND next_floor <= ?
    ORDER BY slot LIMIT 1)
UNION ALL (SELECT slot, owner_key, incarnation, last_owner_key, fence, expires_at, floor, ceiling,
    next_floor FROM cosid_slot WHERE namespace = ? AND held_until IS NOT NULL ORDER BY held_until LIMIT 1)
