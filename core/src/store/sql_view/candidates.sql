-- The candidate rows of an acquisition, for PostgreSQL and SQLite (which reads it with ?n for $n): $1 the
-- namespace, $2 the owner key, $3 the preferred slot and $4 the hinted unused slot (-1 for none), $5 now, $6 now
-- plus the tolerance. See sql_view.rs.
-- The expired leases are scanned once, through their index, whatever plan a prepared statement gets (a generic
-- plan would otherwise walk the namespace in slot order to find the lowest one).
WITH expired AS MATERIALIZED (
    SELECT slot, owner_key, incarnation, last_owner_key, fence, expires_at, floor, ceiling, next_floor
    FROM cosid_slot WHERE namespace = $1 AND owner_key IS NOT NULL AND expires_at < $5)
SELECT * FROM (SELECT slot, owner_key, incarnation, last_owner_key, fence, expires_at, floor, ceiling, next_floor
    FROM cosid_slot WHERE namespace = $1 AND owner_key = $2) a
UNION ALL SELECT * FROM (SELECT slot, owner_key, incarnation, last_owner_key, fence, expires_at, floor, ceiling,
    next_floor FROM cosid_slot WHERE namespace = $1 AND last_owner_key = $2) b
UNION ALL SELECT * FROM (SELECT slot, owner_key, incarnation, last_owner_key, fence, expires_at, floor, ceiling,
    next_floor FROM cosid_slot WHERE namespace = $1 AND slot IN ($3, $4)) c
UNION ALL SELECT * FROM (SELECT slot, owner_key, incarnation, last_owner_key, fence, expires_at, floor, ceiling,
    next_floor FROM cosid_slot WHERE namespace = $1 AND owner_key IS NULL ORDER BY slot LIMIT 1) d
UNION ALL SELECT * FROM (SELECT slot, owner_key, incarnation, last_owner_key, fence, expires_at, floor, ceiling,
    next_floor FROM cosid_slot WHERE namespace = $1 AND owner_key IS NULL AND next_floor <= $6
    ORDER BY slot LIMIT 1) e
UNION ALL SELECT * FROM (SELECT * FROM expired ORDER BY slot LIMIT 1) f
UNION ALL SELECT * FROM (SELECT * FROM expired WHERE next_floor <= $6 ORDER BY slot LIMIT 1) g
UNION ALL SELECT * FROM (SELECT slot, owner_key, incarnation, last_owner_key, fence, expires_at, floor, ceiling,
    next_floor FROM cosid_slot WHERE namespace = $1 AND owner_key IS NOT NULL ORDER BY expires_at LIMIT 1) h
