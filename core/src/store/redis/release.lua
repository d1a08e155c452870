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

  local handed = r.floor
  if last_issued ~= nil then
    handed = math.min(last_issued, r.ceiling)
  end
  r.owner_key = false
  r.incarnation = false
  r.fence = r.fence + 1
  r.next_floor = math.max(r.floor, handed)
  write_slot(r)
  return { 'ok' }
end)
