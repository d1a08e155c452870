-- raise_not_before: ARGV = bits, tolerance_ms, not_before, layout. protocol::raise_not_before.
return run(function()
  local bits, tolerance, not_before = arg_int(1), arg_int(2), arg_int(3)
  local ns = check_namespace(read_namespace(), bits, tolerance, ARGV[4])
  if not_before < ns.not_before then
    stop('lowered', ns.not_before, not_before)
  end
  ns.not_before = not_before
  write_namespace(ns)
  return { 'ok', ns.bits, ns.tolerance_ms, ns.not_before, ns.layout }
end)
