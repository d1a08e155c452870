-- acquire: ARGV = bits, tolerance_ms, owner key, incarnation, ttl_ms, preferred slot ('' for none), layout.
-- protocol::check_namespace, protocol::validate on every slot, then protocol::acquire.
return run(function()
  local bits, tolerance = arg_int(1), arg_int(2)
  local key, incarnation = ARGV[3], ARGV[4]
  local ttl = arg_int(5)
  local preferred = arg_opt_int(6)

  local ns, ns_changed = check_namespace(read_namespace(), bits, tolerance, ARGV[7])
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
      if ns_changed then
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
  -- A slot whose floor is far in the future (released by a holder whose clock ran ahead, say) makes its next
  -- holder wait until then. The preferred and sticky slots keep their rank while their floor is less than a lease
  -- (or the tolerance) away; the lowest free slot is looked for among slots that can start within the tolerance;
  -- only then any free slot.
  local function floor_of(s)
    local r = by_slot[s]
    if r and r.next_floor > ns.not_before then
      return r.next_floor
    end
    return ns.not_before
  end
  local soon = now + ns.tolerance_ms
  local function near(s)
    return floor_of(s) <= math.max(now + ttl, soon)
  end
  local function past(s)
    return floor_of(s) <= soon
  end
  local function any()
    return true
  end
  -- 2. The preferred slot, if free.
  local function preferred_slot(ready)
    if preferred ~= nil and preferred < count and free(preferred) and ready(preferred) then
      return preferred
    end
    return nil
  end
  -- 3. The lowest free slot whose last owner had this key ("sticky"); slots are sorted.
  local function sticky_slot(ready)
    for _, r in ipairs(slots) do
      if r.last_owner_key == key and free(r.slot) and ready(r.slot) then
        return r.slot
      end
    end
    return nil
  end
  -- 4. The lowest free slot. Stops within #slots + 1 steps unless every slot is held: a slot never used is free,
  -- and past when not_before is, the only case where past slots are looked for.
  local function lowest_slot(ready)
    local s = 0
    while s < count do
      if free(s) and ready(s) then
        return s
      end
      s = s + 1
    end
    return nil
  end
  local chosen = preferred_slot(near) or sticky_slot(near)
  if chosen == nil and ns.not_before <= soon then
    chosen = lowest_slot(past)
  end
  chosen = chosen or preferred_slot(any) or sticky_slot(any) or lowest_slot(any)
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
  if ns_changed then
    write_namespace(ns)
  end
  write_slot(record)
  return lease_reply(record, now, duplicate)
end)
