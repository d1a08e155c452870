-- acquire: ARGV = bits, tolerance_ms, owner key, incarnation, ttl_ms, preferred slot ('' for none), layout.
-- protocol::check_namespace, then protocol::acquire, decided on the few records the acquire index names (each read
-- and validated) when there is an index, else on every record (each validated), after which the index is rebuilt.
-- A decision on the index that would refuse (exhausted) is made again on every record first.
return run(function()
  local bits, tolerance = arg_int(1), arg_int(2)
  local key, incarnation = ARGV[3], ARGV[4]
  local ttl = arg_int(5)
  local preferred = arg_opt_int(6)

  local ns, ns_changed = check_namespace(read_namespace(), bits, tolerance, ARGV[7])
  local now = store_now()
  local count = 2 ^ ns.bits
  local soon = now + ns.tolerance_ms

  local function held(r)
    return r.owner_key ~= false and r.expires_at >= now
  end

  -- The records this call has read, validated; false for a slot with no record. With `complete`, every record is
  -- here and a slot that is not has none.
  local cache, complete = {}, false
  local function record(s)
    local r = cache[s]
    if r == nil then
      if complete then
        return nil
      end
      r = read_slot(s) or false
      if r then
        validate(r, ns.bits)
      end
      cache[s] = r
    end
    return r or nil
  end
  local function free(s)
    local r = record(s)
    return r == nil or not held(r)
  end

  -- A slot whose floor is far in the future (released by a holder whose clock ran ahead, say) makes its next
  -- holder wait until then. The preferred and sticky slots keep their rank while their floor is less than a lease
  -- (or the tolerance) away; the lowest free slot is looked for among slots that can start within the tolerance;
  -- only then any free slot.
  local function floor_of(s)
    local r = record(s)
    if r and r.next_floor > ns.not_before then
      return r.next_floor
    end
    return ns.not_before
  end
  local function near(s)
    return floor_of(s) <= math.max(now + ttl, soon)
  end
  local function past(s)
    return floor_of(s) <= soon
  end
  local function any()
    return true
  end

  -- protocol::acquire over a view of the namespace: owned() = the records with this owner key, sticky() = the
  -- slots whose last owner had it (both ascending), lowest(ready) = the lowest free slot that is ready, earliest()
  -- = the earliest expiry. Returns the record of an idempotent retry, or the slot to grant; and the slot of a
  -- duplicate owner key.
  local function decide(view)
    local owned = view.owned()
    local duplicate = false
    for _, r in ipairs(owned) do
      if held(r) and r.incarnation ~= incarnation then
        duplicate = r.slot
        break
      end
    end
    -- 1. The slot this exact owner already holds: an idempotent retry, nothing to write.
    for _, r in ipairs(owned) do
      if r.incarnation == incarnation then
        return r, nil, duplicate
      end
    end
    -- 2. The preferred slot, if free.
    local function preferred_slot(ready)
      if preferred ~= nil and preferred < count and free(preferred) and ready(preferred) then
        return preferred
      end
      return nil
    end
    -- 3. The lowest free slot whose last owner had this key ("sticky").
    local sticky = view.sticky()
    local function sticky_slot(ready)
      for _, s in ipairs(sticky) do
        if free(s) and ready(s) then
          return s
        end
      end
      return nil
    end
    -- 4. The lowest free slot.
    local chosen = preferred_slot(near) or sticky_slot(near)
    if chosen == nil and ns.not_before <= soon then
      chosen = view.lowest(past)
    end
    chosen = chosen or preferred_slot(any) or sticky_slot(any) or view.lowest(any)
    -- 5. None: exhausted, with the earliest expiry to wait for.
    if chosen == nil then
      stop('exhausted', count, view.earliest(), now)
    end
    return nil, chosen, duplicate
  end

  -- The namespace from every record: the protocol as written.
  local function full_view()
    local slots = read_slots()
    for _, r in ipairs(slots) do
      validate(r, ns.bits)
      cache[r.slot] = r
    end
    complete = true
    local view = {}
    function view.owned()
      local owned = {}
      for _, r in ipairs(slots) do
        if r.owner_key == key then
          owned[#owned + 1] = r
        end
      end
      return owned
    end
    function view.sticky()
      local sticky = {}
      for _, r in ipairs(slots) do
        if r.last_owner_key == key then
          sticky[#sticky + 1] = r.slot
        end
      end
      return sticky
    end
    -- Stops within #slots + 1 steps unless every slot is held: a slot never used is free, and past when
    -- not_before is, the only case where past slots are looked for.
    function view.lowest(ready)
      local s = 0
      while s < count do
        if free(s) and ready(s) then
          return s
        end
        s = s + 1
      end
      return nil
    end
    function view.earliest()
      local earliest = nil
      for _, r in ipairs(slots) do
        if earliest == nil or r.expires_at < earliest then
          earliest = r.expires_at
        end
      end
      return earliest or now
    end
    return view
  end

  -- The namespace from the index: a few records, each checked against what the index says of it.
  local STALE = {}
  local function check(ok)
    if not ok then
      error(STALE)
    end
  end
  local function indexed_view()
    local view = {}
    function view.owned()
      local owned = {}
      for _, s in ipairs(list_of('o:' .. key)) do
        local r = record(s)
        check(r and r.owner_key == key)
        owned[#owned + 1] = r
      end
      return owned
    end
    function view.sticky()
      local sticky = list_of('l:' .. key)
      for _, s in ipairs(sticky) do
        local r = record(s)
        check(r and r.last_owner_key == key)
      end
      return sticky
    end
    -- The free set in slot order up to hw, the lowest slot never used (free, and past whenever this looks).
    function view.lowest(ready)
      local hw = tonumber(redis.call('HGET', KEYS[3], 'hw'))
      check(hw ~= nil and (hw >= count or record(hw) == nil))
      local rank, batch = 0, 64
      while true do
        local members = redis.call('ZRANGE', KEYS[4], rank, rank + batch - 1)
        for _, m in ipairs(members) do
          local s = tonumber(m)
          check(s ~= nil)
          if s > hw then
            break
          end
          local r = record(s)
          check(r and not held(r))
          if ready(s) then
            return s
          end
        end
        if #members < batch or tonumber(members[#members]) > hw then
          break
        end
        rank = rank + batch
      end
      if hw < count then
        return hw
      end
      return nil
    end
    function view.earliest()
      local first = redis.call('ZRANGE', KEYS[5], 0, 0, 'WITHSCORES')
      return tonumber(first[2]) or now
    end
    return view
  end

  local indexed = index_present()
    and tonumber(redis.call('HGET', KEYS[3], 'n')) == redis.call('HLEN', KEYS[2])
  local ok, retry, chosen, duplicate
  if indexed then
    -- Leases that expired since they were last written are free now.
    local expired = redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', '(' .. fmt(now))
    for _, m in ipairs(expired) do
      if tonumber(m) == nil then
        indexed = false
        break
      end
      redis.call('ZREM', KEYS[5], m)
      redis.call('ZADD', KEYS[4], tonumber(m), m)
    end
  end
  if indexed then
    ok, retry, chosen, duplicate = pcall(decide, indexed_view())
    if not ok then
      -- An index that says no slot is free (hw at 2^bits with records deleted by hand, `free` deleted) would
      -- refuse for good: before refusing, decide on every record, which rebuilds the index when it lied.
      local exhausted = type(retry) == 'table' and type(retry.cosid) == 'table' and retry.cosid[1] == 'exhausted'
      if retry ~= STALE and not exhausted then
        error(retry, 0)
      end
      indexed = false
    end
  end
  if not indexed then
    retry, chosen, duplicate = decide(full_view())
  end

  if retry then
    if ns_changed then
      write_namespace(ns)
    end
    if not indexed then
      rebuild_index(now)
    end
    return lease_reply(retry, now, duplicate)
  end

  local fence, next_floor = 0, 0
  local previous = record(chosen)
  local before = nil
  if previous then
    fence, next_floor = previous.fence, previous.next_floor
    before = keys_of(previous)
  end
  local floor = math.max(next_floor, ns.not_before)
  local expires_at = exact(now + ttl, 'expires_at')
  local ceiling = math.max(exact(expires_at + ns.tolerance_ms, 'ceiling'), floor)
  local r = {
    slot = chosen, owner_key = key, incarnation = incarnation, last_owner_key = key,
    fence = fence + 1, expires_at = expires_at, floor = floor, ceiling = ceiling, next_floor = ceiling,
  }
  if ns_changed then
    write_namespace(ns)
  end
  write_slot(r, before, now)
  if not indexed then
    rebuild_index(now)
  end
  return lease_reply(r, now, duplicate)
end)
