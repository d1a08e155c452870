-- acquire: ARGV = bits, tolerance_ms, owner key, incarnation, ttl_ms, preferred slot ('' for none).
-- protocol::check_namespace, protocol::validate on every slot, then protocol::acquire.
return run(function()
  local bits, tolerance = arg_int(1), arg_int(2)
  local key, incarnation = ARGV[3], ARGV[4]
  local ttl = arg_int(5)
  local preferred = arg_opt_int(6)

  local ns, is_new = check_namespace(read_namespace(), bits, tolerance)
  local slots = read_slots()
  for _, r in ipairs(slots) do
    validate(r, ns.bits)
  end
  local now = store_now()

  local function held(r)
    return r.owner_key ~= false and r.expires_at >= now
  end
  local by_slot = {}
  local duplicate = false
  for _, r in ipairs(slots) do
    by_slot[r.slot] = r
    if not duplicate and held(r) and r.owner_key == key and r.incarnation ~= incarnation then
      duplicate = r.slot
    end
  end

  -- 1. The slot this exact owner already holds: an idempotent retry, nothing to write.
  for _, r in ipairs(slots) do
    if r.owner_key == key and r.incarnation == incarnation then
      if is_new then
        write_namespace(ns)
      end
      return lease_reply(r, now, duplicate)
    end
  end

  local count = 2 ^ ns.bits
  local function free(s)
    local r = by_slot[s]
    return r == nil or not held(r)
  end
  local chosen = nil
  -- 2. The preferred slot, if free.
  if preferred ~= nil and preferred < count and free(preferred) then
    chosen = preferred
  end
  -- 3. The lowest free slot whose last owner had this key ("sticky"); slots are sorted.
  if chosen == nil then
    for _, r in ipairs(slots) do
      if not held(r) and r.last_owner_key == key then
        chosen = r.slot
        break
      end
    end
  end
  -- 4. The lowest free slot. Stops within #slots + 1 steps unless every slot is held.
  if chosen == nil then
    local s = 0
    while s < count do
      if free(s) then
        chosen = s
        break
      end
      s = s + 1
    end
  end
  -- 5. None: exhausted, with the earliest expiry to wait for.
  if chosen == nil then
    local earliest = nil
    for _, r in ipairs(slots) do
      if earliest == nil or r.expires_at < earliest then
        earliest = r.expires_at
      end
    end
    stop('exhausted', count, earliest or now, now)
  end

  local fence, next_floor = 0, 0
  local previous = by_slot[chosen]
  if previous then
    fence, next_floor = previous.fence, previous.next_floor
  end
  local floor = math.max(next_floor, ns.not_before)
  local expires_at = exact(now + ttl, 'expires_at')
  local ceiling = math.max(exact(expires_at + ns.tolerance_ms, 'ceiling'), floor)
  local record = {
    slot = chosen, owner_key = key, incarnation = incarnation, last_owner_key = key,
    fence = fence + 1, expires_at = expires_at, floor = floor, ceiling = ceiling, next_floor = ceiling,
  }
  if is_new then
    write_namespace(ns)
  end
  write_slot(record)
  return lease_reply(record, now, duplicate)
end)
