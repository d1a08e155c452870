-- release: ARGV = slot, incarnation, fence, last issued ms ('' for none), the lease's floor, the lease's ceiling.
-- protocol::release.
return run(function()
  local slot, incarnation, fence = arg_int(1), ARGV[2], arg_int(3)
  local last_issued = arg_opt_int(4)
  local floor, ceiling = arg_int(5), arg_int(6)

  local ns = held_namespace(slot, fence, ceiling)
  local r = read_slot(slot)
  if r then
    validate(r, ns.bits)
  end
  matching(slot, r, incarnation, fence, floor, ceiling)

  local before = keys_of(r)
  local handed = r.floor
  if last_issued ~= nil then
    handed = math.min(last_issued, r.ceiling)
  end
  r.owner_key = false
  r.incarnation = false
  r.fence = r.fence + 1
  r.next_floor = math.max(r.floor, handed)
  -- Released: the index files it under free whatever the time, so no clock is read.
  write_slot(r, before, 0)
  return { 'ok' }
end)
