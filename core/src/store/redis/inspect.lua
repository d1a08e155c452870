-- inspect: no ARGV. The namespace record (or false), every slot record, and the store clock, read atomically.
-- Records are decoded (an undecodable one is refused) but not validated, so `cosid leases` can show them.
return run(function()
  local ns = read_namespace()
  local slots = read_slots()
  local now = store_now()
  local ns_reply = false
  if ns then
    ns_reply = { ns.bits, ns.tolerance_ms, ns.not_before, ns.layout }
  end
  local slot_replies = {}
  for i, r in ipairs(slots) do
    slot_replies[i] = {
      r.slot, r.owner_key, r.incarnation, r.last_owner_key,
      r.fence, r.expires_at, r.floor, r.ceiling, r.next_floor,
    }
  end
  return { 'ok', now, ns_reply, slot_replies }
end)
