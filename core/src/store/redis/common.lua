-- cosid: the lease rules of core/src/lease/protocol.rs, transcribed for Redis. Keep the two in step: the shared
-- conformance suite (core/tests/conformance) runs the same cases against both.
--
-- Every script gets KEYS[1] = the namespace hash `cosid:{<encoded name>}:ns` (fields bits, tolerance_ms,
-- not_before, and layout: lease::layout_text, absent in records written before layouts were recorded), KEYS[2] =
-- the slots hash `cosid:{<encoded name>}:slots` (one field per slot), and the three keys of the acquire index
-- (below): KEYS[3] = `cosid:{<encoded name>}:index`, KEYS[4] = `...:free`, KEYS[5] = `...:held`. All share a hash
-- tag, so a Redis Cluster keeps a namespace on one shard. No key ever gets a TTL.
--
-- A script answers with a table whose first element names the outcome: 'ok', 'exhausted', 'mismatch', 'lost',
-- 'regression', 'corrupt' or 'lowered'. Every outcome but 'ok' is decided before the first write, so a refused call changes
-- no record (an acquire may have moved expired leases within its index, which records nothing new). Numbers are whole and below 2^53, where Lua's doubles are exact; the Rust side checks its arguments.

-- Redis 3.2 to 4 replicate scripts verbatim unless told otherwise; TIME then refuses later writes. A no-op since 5.
if redis.replicate_commands then redis.replicate_commands() end

local MAX_EXACT = 9007199254740991
local UUID = '^%x%x%x%x%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%x%x%x%x%x%x%x%x$'
local NUMBER_FIELDS = { 'fence', 'expires_at', 'floor', 'ceiling', 'next_floor' }

-- Ends the script with an outcome other than 'ok' (caught by run below).
local function stop(...)
  error({ cosid = { ... } })
end

local function corrupt(what, detail)
  stop('corrupt', what, detail)
end

local function fmt(n)
  return string.format('%d', n)
end

local function quote(v)
  return '"' .. tostring(v) .. '"'
end

-- A whole number written in decimal, below 2^53; nil for anything else.
local function int(s)
  if type(s) ~= 'string' or #s == 0 or #s > 16 or not string.find(s, '^%d+$') then
    return nil
  end
  local n = tonumber(s)
  if n > MAX_EXACT then
    return nil
  end
  return n
end

local function arg_int(i)
  local n = int(ARGV[i])
  if n == nil then
    error('cosid: argument ' .. i .. ' is not a whole number below 2^53: ' .. quote(ARGV[i]))
  end
  return n
end

local function arg_opt_int(i)
  if ARGV[i] == '' then
    return nil
  end
  return arg_int(i)
end

local function exact(n, what)
  if n > MAX_EXACT then
    error('cosid: ' .. what .. ' would pass 2^53')
  end
  return n
end

-- The store clock: the server's, in milliseconds.
local function store_now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- lease::layout_text: v1;epoch_ms;tick_ms;timestamp_bits;slot_bits;sequence_bits. Returns the fields by the
-- names a mismatch gives them, in the order they are compared, or nil for anything else.
local LAYOUT_FIELDS = { 'layout epoch_ms', 'layout tick_ms', 'layout timestamp_bits', 'layout slot_bits',
  'layout sequence_bits' }
local function parse_layout(s)
  if type(s) ~= 'string' then
    return nil
  end
  local parts = { string.match(s, '^v1;(%d+);(%d+);(%d+);(%d+);(%d+)$') }
  if #parts ~= 5 then
    return nil
  end
  local fields = {}
  for i, p in ipairs(parts) do
    fields[i] = int(p)
    if fields[i] == nil then
      return nil
    end
  end
  return fields
end

local function read_namespace()
  local flat = redis.call('HGETALL', KEYS[1])
  if #flat == 0 then
    return nil
  end
  local h = {}
  for i = 1, #flat, 2 do
    local name = flat[i]
    if name ~= 'bits' and name ~= 'tolerance_ms' and name ~= 'not_before' and name ~= 'layout' then
      corrupt('the namespace record', 'unknown field ' .. quote(name))
    end
    h[name] = flat[i + 1]
  end
  local record = {}
  for _, name in ipairs({ 'bits', 'tolerance_ms', 'not_before' }) do
    if h[name] == nil then
      corrupt('the namespace record', name .. ' is missing')
    end
    record[name] = int(h[name])
    if record[name] == nil then
      corrupt('the namespace record', name .. ' ' .. quote(h[name]) .. ' is not a whole number below 2^53')
    end
  end
  if record.bits < 1 or record.bits > 31 then
    corrupt('the namespace record', 'bits ' .. fmt(record.bits) .. ' is not 1 to 31')
  end
  -- Absent in a record written before layouts were recorded: the next writer records it.
  record.layout = h.layout or false
  if record.layout and parse_layout(record.layout) == nil then
    corrupt('the namespace record', 'layout ' .. quote(record.layout)
      .. ' is not v1;epoch_ms;tick_ms;timestamp_bits;slot_bits;sequence_bits')
  end
  return record
end

local function write_namespace(ns)
  redis.call('HSET', KEYS[1], 'bits', fmt(ns.bits), 'tolerance_ms', fmt(ns.tolerance_ms),
    'not_before', fmt(ns.not_before))
  if ns.layout then
    redis.call('HSET', KEYS[1], 'layout', ns.layout)
  end
end

-- protocol::check_namespace: the stored record, or a new one for a new namespace, or the stored one given this
-- instance's layout when it had none (second result true when it must be written).
local function check_namespace(stored, bits, tolerance, layout)
  local asked = parse_layout(layout)
  if asked == nil then
    error('cosid: the layout argument is not a layout: ' .. quote(layout))
  end
  if stored == nil then
    return { bits = bits, tolerance_ms = tolerance, not_before = 0, layout = layout }, true
  end
  if stored.bits ~= bits then
    stop('mismatch', 'bits', stored.bits, bits)
  end
  if stored.tolerance_ms ~= tolerance then
    stop('mismatch', 'tolerance_ms', stored.tolerance_ms, tolerance)
  end
  if not stored.layout then
    stored.layout = layout
    return stored, true
  end
  local theirs = parse_layout(stored.layout)
  for i, name in ipairs(LAYOUT_FIELDS) do
    if theirs[i] ~= asked[i] then
      stop('mismatch', name, theirs[i], asked[i])
    end
  end
  return stored, false
end

-- A slot record is one field of the slots hash: the slot number (decimal, no leading zero) ->
--   v1;<fence>;<expires_at>;<floor>;<ceiling>;<next_floor>;<incarnation, or nothing>;<owner key><last owner key>
-- where each key is `-` when absent, else `<length in bytes>:<bytes>` (keys may hold any character).
-- Decoded records carry `false` for an absent owner key, incarnation or last owner key.

-- A length-prefixed key of `s` at `pos`; returns it (or false) and the position after it.
local function take_key(s, pos, what, name)
  if string.sub(s, pos, pos) == '-' then
    return false, pos + 1
  end
  local digits, start = string.match(s, '^(%d+):()', pos)
  local len = int(digits)
  if len == nil or start + len - 1 > #s then
    corrupt(what, name .. ' at byte ' .. pos .. ' of the keys ' .. quote(s) .. ' is neither - nor <length>:<bytes>')
  end
  return string.sub(s, start, start + len - 1), start + len
end

local function decode_slot(slot, v)
  local what = 'slot ' .. fmt(slot)
  local parts = { string.match(v, '^v1;([^;]*);([^;]*);([^;]*);([^;]*);([^;]*);([^;]*);(.*)$') }
  if #parts ~= 7 then
    corrupt(what, 'record ' .. quote(v)
      .. ' is not v1;fence;expires_at;floor;ceiling;next_floor;incarnation;keys')
  end
  local r = { slot = slot }
  for i, name in ipairs(NUMBER_FIELDS) do
    r[name] = int(parts[i])
    if r[name] == nil then
      corrupt(what, name .. ' ' .. quote(parts[i]) .. ' is not a whole number below 2^53')
    end
  end
  local incarnation, keys = parts[6], parts[7]
  local owner_key, pos = take_key(keys, 1, what, 'the owner key')
  local last_owner_key, after = take_key(keys, pos, what, 'the last owner key')
  if after ~= #keys + 1 then
    corrupt(what, 'the keys ' .. quote(keys) .. ' have ' .. (#keys + 1 - after) .. ' bytes past their end')
  end
  if (owner_key == false) ~= (incarnation == '') then
    corrupt(what, 'owner key and incarnation must be both set or both empty')
  end
  if incarnation ~= '' and not string.find(incarnation, UUID) then
    corrupt(what, 'incarnation ' .. quote(incarnation) .. ' is not a UUID')
  end
  r.owner_key = owner_key
  r.incarnation = incarnation ~= '' and string.lower(incarnation) or false
  r.last_owner_key = last_owner_key
  return r
end

-- Every stored slot record of the namespace, by slot number.
local function read_slots()
  local flat = redis.call('HGETALL', KEYS[2])
  local records = {}
  for i = 1, #flat, 2 do
    local slot = int(flat[i])
    if slot == nil or fmt(slot) ~= flat[i] then
      corrupt('the slots hash', 'field ' .. quote(flat[i]) .. ' is not a slot number')
    end
    records[#records + 1] = decode_slot(slot, flat[i + 1])
  end
  table.sort(records, function(a, b)
    return a.slot < b.slot
  end)
  return records
end

-- One slot record, or nil when the slot was never used.
local function read_slot(slot)
  local v = redis.call('HGET', KEYS[2], fmt(slot))
  if not v then
    return nil
  end
  return decode_slot(slot, v)
end

local function key_part(k)
  if k then
    return fmt(#k) .. ':' .. k
  end
  return '-'
end

-- The acquire index: a hint that lets acquire read a handful of slot records instead of every one, so its cost
-- does not grow with the namespace. It decides nothing: every slot it names is read and checked before it is
-- chosen, and a hint the records contradict makes acquire fall back to reading every record (the protocol as
-- written) and rebuild the index. It is written in the same script as the records it describes.
--   KEYS[3], a hash: v = the index version; n = how many slot records it covers (HLEN of the slots hash, or the
--     index is rebuilt); hw = the lowest slot with no record; o:<key> and l:<key> = the slots whose record has that
--     owner key or last owner key, ascending and space-separated.
--   KEYS[4] (free) and KEYS[5] (held), sorted sets: every slot record is in one of them. held: owner key set, score
--     expires_at; free: released, or found expired by a sweep, score = the slot number. Acquire first sweeps the
--     held leases that have expired into free, so the lowest free slot is the lower of free's first and hw.
-- A namespace written before the index (or whose index was deleted) gets one at its next acquire.
local INDEX_VERSION = '1'

local function index_present()
  return redis.call('HGET', KEYS[3], 'v') == INDEX_VERSION
end

local function list_of(field)
  local v = redis.call('HGET', KEYS[3], field)
  local list = {}
  if v then
    for part in string.gmatch(v, '%d+') do
      list[#list + 1] = tonumber(part)
    end
  end
  return list
end

local function list_change(field, slot, add)
  local list, kept = list_of(field), {}
  for _, s in ipairs(list) do
    if s ~= slot then
      kept[#kept + 1] = s
    end
  end
  if add then
    kept[#kept + 1] = slot
    table.sort(kept)
  end
  if #kept == 0 then
    redis.call('HDEL', KEYS[3], field)
  else
    local parts = {}
    for i, s in ipairs(kept) do
      parts[i] = fmt(s)
    end
    redis.call('HSET', KEYS[3], field, table.concat(parts, ' '))
  end
end

local function index_placement(r, now)
  if r.owner_key and r.expires_at >= now then
    redis.call('ZADD', KEYS[5], r.expires_at, fmt(r.slot))
    redis.call('ZREM', KEYS[4], fmt(r.slot))
  else
    redis.call('ZADD', KEYS[4], r.slot, fmt(r.slot))
    redis.call('ZREM', KEYS[5], fmt(r.slot))
  end
end

-- Keeps the index in step with a record just written; `before` holds the record's owner and last owner keys as
-- they were, or is nil for a slot that had no record.
local function index_update(r, before, now)
  if before == nil then
    -- A count that is not a number stays so: the next acquire finds it wrong and rebuilds.
    local n = tonumber(redis.call('HGET', KEYS[3], 'n'))
    if n then
      redis.call('HSET', KEYS[3], 'n', fmt(n + 1))
    end
    local hw = tonumber(redis.call('HGET', KEYS[3], 'hw'))
    if hw == r.slot then
      while redis.call('HEXISTS', KEYS[2], fmt(hw)) == 1 do
        hw = hw + 1
      end
      redis.call('HSET', KEYS[3], 'hw', fmt(hw))
    end
    before = { owner_key = false, last_owner_key = false }
  end
  if before.owner_key ~= r.owner_key then
    if before.owner_key then
      list_change('o:' .. before.owner_key, r.slot, false)
    end
    if r.owner_key then
      list_change('o:' .. r.owner_key, r.slot, true)
    end
  end
  if before.last_owner_key ~= r.last_owner_key then
    if before.last_owner_key then
      list_change('l:' .. before.last_owner_key, r.slot, false)
    end
    if r.last_owner_key then
      list_change('l:' .. r.last_owner_key, r.slot, true)
    end
  end
  index_placement(r, now)
end

-- Builds the index anew from every record: once per namespace, or after a hint the records contradicted.
local function rebuild_index(now)
  redis.call('DEL', KEYS[3], KEYS[4], KEYS[5])
  local slots = read_slots()
  local hw = 0
  local owners, lasts = {}, {}
  local function append(t, k, slot)
    if k then
      t[k] = t[k] or {}
      t[k][#t[k] + 1] = fmt(slot)
    end
  end
  for _, r in ipairs(slots) do
    if r.slot == hw then
      hw = hw + 1
    end
    index_placement(r, now)
    append(owners, r.owner_key, r.slot)
    append(lasts, r.last_owner_key, r.slot)
  end
  for k, list in pairs(owners) do
    redis.call('HSET', KEYS[3], 'o:' .. k, table.concat(list, ' '))
  end
  for k, list in pairs(lasts) do
    redis.call('HSET', KEYS[3], 'l:' .. k, table.concat(list, ' '))
  end
  redis.call('HSET', KEYS[3], 'v', INDEX_VERSION, 'n', fmt(#slots), 'hw', fmt(hw))
end

-- Writes a slot record, and keeps the index (when there is one) in step. `before`: the record's owner and last
-- owner keys before this write ({ owner_key, last_owner_key }), or nil when the slot had no record.
local function write_slot(r, before, now)
  local v = 'v1;' .. fmt(exact(r.fence, 'fence')) .. ';' .. fmt(exact(r.expires_at, 'expires_at')) .. ';'
    .. fmt(exact(r.floor, 'floor')) .. ';' .. fmt(exact(r.ceiling, 'ceiling')) .. ';'
    .. fmt(exact(r.next_floor, 'next_floor')) .. ';' .. (r.incarnation or '') .. ';'
    .. key_part(r.owner_key) .. key_part(r.last_owner_key)
  redis.call('HSET', KEYS[2], fmt(r.slot), v)
  if index_present() then
    index_update(r, before, now)
  end
end

local function keys_of(r)
  return { owner_key = r.owner_key, last_owner_key = r.last_owner_key }
end

-- protocol::validate: refuses a record that no sequence of protocol steps can produce.
local function validate(r, bits)
  local what = 'slot ' .. fmt(r.slot)
  if r.slot >= 2 ^ bits then
    corrupt(what, 'slot ' .. fmt(r.slot) .. ' is not below 2^' .. fmt(bits))
  end
  if r.floor > r.ceiling then
    corrupt(what, 'floor ' .. fmt(r.floor) .. ' is above ceiling ' .. fmt(r.ceiling))
  end
  if r.owner_key and r.next_floor < r.ceiling then
    corrupt(what, 'next_floor ' .. fmt(r.next_floor) .. " is below the holder's ceiling " .. fmt(r.ceiling))
  end
  if r.next_floor < r.floor then
    corrupt(what, 'next_floor ' .. fmt(r.next_floor) .. ' is below floor ' .. fmt(r.floor))
  end
  if r.fence == 0 then
    corrupt(what, 'fence is 0 on a stored record')
  end
end

-- protocol::matching: the record, if it is still this lease's (same incarnation and fence). A record no protocol
-- step could have made from the one that granted the lease means the store lost writes: 'regression'.
local function matching(slot, r, incarnation, fence, floor, ceiling)
  if r == nil then
    stop('regression', 'slot ' .. fmt(slot), 'the slot has no record, but a lease with fence ' .. fmt(fence)
      .. ' and ceiling ' .. fmt(ceiling) .. ' is held on it')
  end
  local mine = r.owner_key and r.incarnation == incarnation
  if r.fence < fence or (r.fence == fence and not mine) then
    local state = 'released'
    if r.owner_key then
      state = 'held by ' .. r.owner_key
    end
    stop('regression', 'slot ' .. fmt(r.slot), 'fence is ' .. fmt(r.fence) .. ' in the store (' .. state
      .. '), but a lease with fence ' .. fmt(fence) .. ' is held on it')
  end
  -- Past this lease's fence the holder's own release may have lowered next_floor to its last timestamp.
  if r.fence == fence and (r.floor ~= floor or r.ceiling < ceiling or r.next_floor < ceiling) then
    stop('regression', 'slot ' .. fmt(r.slot), 'the store has floor ' .. fmt(r.floor) .. ', ceiling '
      .. fmt(r.ceiling) .. ', next_floor ' .. fmt(r.next_floor) .. ' at fence ' .. fmt(r.fence)
      .. ", below the lease's floor " .. fmt(floor) .. ', ceiling ' .. fmt(ceiling) .. ' at fence ' .. fmt(fence))
  end
  if not r.owner_key then
    stop('lost', 'the slot was released (fence ' .. fmt(r.fence) .. ' now, lease fence ' .. fmt(fence) .. ')')
  end
  if r.incarnation ~= incarnation then
    stop('lost', 'the slot is held by ' .. r.owner_key .. ' (incarnation ' .. r.incarnation .. ') with fence '
      .. fmt(r.fence))
  end
  if r.fence ~= fence then
    stop('lost', 'fence is ' .. fmt(r.fence) .. ' in the store, ' .. fmt(fence) .. ' in the lease')
  end
  return r
end

-- protocol::held_namespace: the namespace record of a held lease. It is written before any slot is granted and
-- never deleted, so its absence means the store lost writes.
local function held_namespace(slot, fence, ceiling)
  local ns = read_namespace()
  if ns == nil then
    stop('regression', 'the record', 'missing while slot ' .. fmt(slot) .. ' is held with fence ' .. fmt(fence)
      .. ' and ceiling ' .. fmt(ceiling))
  end
  return ns
end

local function lease_reply(r, now, duplicate_slot)
  return { 'ok', r.slot, r.owner_key, r.incarnation, r.fence, r.expires_at, r.floor, r.ceiling, now, duplicate_slot }
end

-- Runs an operation: its outcome (ok or refused) becomes the reply; anything else is a script error.
local function run(operation)
  local ok, result = pcall(operation)
  if ok then
    return result
  end
  if type(result) == 'table' and result.cosid then
    return result.cosid
  end
  if type(result) == 'table' and result.err then
    return redis.error_reply(result.err)
  end
  return redis.error_reply('ERR ' .. tostring(result))
end

