-- renew: ARGV = slot, incarnation, fence, ttl_ms, tolerance_ms, the lease's floor, the lease's ceiling.
-- protocol::renew.
return run(function()
  local slot, incarnation, fence = arg_int(1), ARGV[2], arg_int(3)
  local ttl, tolerance = arg_int(4), arg_int(5)
  local floor, ceiling = arg_int(6), arg_int(7)

  local ns = held_namespace(slot, fence, ceiling)
  local r = read_slot(slot)
  if r then
    validate(r, ns.bits)
  end
  local now = store_now()
  matching(slot, r, incarnation, fence, floor, ceiling)

  local before = keys_of(r)
  local expires_at = math.max(r.expires_at, exact(now + ttl, 'expires_at'))
  local new_ceiling = math.max(exact(expires_at + tolerance, 'ceiling'), r.floor, r.ceiling)
  r.expires_at = expires_at
  r.ceiling = new_ceiling
  r.next_floor = math.max(r.next_floor, new_ceiling)
  write_slot(r, before, now)
  return lease_reply(r, now, false)
end)
