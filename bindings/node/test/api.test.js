'use strict'
// The process-wide API, in the order a program uses it: configure, ready, ids, conversions, shutdown.
// Every test file runs in its own process, so this file owns the process-wide runtime.

const test = require('node:test')
const assert = require('node:assert/strict')
const { sqliteStore, assertUnique, nextEvent } = require('./fixtures/helpers.js')
const cosid = require('..')

const store = sqliteStore()

test('before the start: no status, the configured layout, configure validates', () => {
  assert.equal(cosid.status(), null)
  cosid.configure({ store, namespace: 'api-test', ttl: '5s', tolerance: 500 })
  assert.equal(cosid.status(), null, 'configure() does not start the runtime')
  assert.equal(cosid.layout().totalBits, 63)
  // A refused configure() keeps the previous settings.
  assert.throws(() => cosid.configure({ store, ttl: 'soon' }), { code: 'CONFIG' })
  assert.equal(cosid.status(), null)
})

test('ready() starts the runtime (ready.test.js shows it does so off the event loop)', async () => {
  const acquired = nextEvent(cosid.onEvent, 'ACQUIRED')
  const p = cosid.ready()
  assert.ok(p instanceof Promise)
  assert.equal(await p, undefined)
  const event = await acquired
  const s = cosid.status()
  assert.equal(s.namespace, 'api-test')
  assert.equal(s.store, 'sqlite')
  assert.equal(s.state, 'ACTIVE')
  assert.equal(s.slot, 0)
  assert.ok(s.fence >= 1)
  assert.ok(s.ceilingMs > s.floorMs)
  assert.ok(s.expiresAtMs <= s.ceilingMs)
  assert.match(s.incarnation, /^[0-9a-f-]{36}$/)
  assert.equal(typeof s.ownerKey, 'string')
  // A callback registered before the start hears of the acquisition.
  assert.deepEqual(
    [event.slot, event.fence, event.floorMs, event.ceilingMs, event.expiresAtMs],
    [s.slot, s.fence, s.floorMs, s.ceilingMs, s.expiresAtMs],
  )
  // Already started: resolves at once.
  await cosid.ready()
})

test('configure() while the runtime runs throws ALREADY_INITIALIZED', () => {
  assert.throws(() => cosid.configure({ store }), (err) => {
    assert.equal(err.code, 'ALREADY_INITIALIZED')
    assert.match(err.message, /already running/)
    return true
  })
})

test('nextId() returns increasing bigints of this slot', () => {
  let last = 0n
  for (let i = 0; i < 10_000; i++) {
    const id = cosid.nextId()
    assert.equal(typeof id, 'bigint')
    assert.ok(id > last, `${id} after ${last}`)
    last = id
  }
  assert.equal(cosid.parse(last).slot, cosid.status().slot)
})

test('nextIdString() returns the decimal form, in order with nextId()', () => {
  const a = cosid.nextId()
  const s = cosid.nextIdString()
  const b = cosid.nextId()
  assert.equal(typeof s, 'string')
  assert.match(s, /^[1-9][0-9]*$/)
  assert.ok(BigInt(s) > a && BigInt(s) < b)
  assert.equal(JSON.parse(JSON.stringify({ id: s })).id, s)
})

test('nextIds(n) returns n increasing ids in a BigUint64Array', () => {
  const before = cosid.nextId()
  const ids = cosid.nextIds(10_000)
  assert.ok(ids instanceof BigUint64Array)
  assert.equal(ids.length, 10_000)
  assert.ok(ids[0] > before)
  for (let i = 1; i < ids.length; i++) assert.ok(ids[i] > ids[i - 1])
  assert.ok(cosid.nextId() > ids[ids.length - 1])
  assert.equal(cosid.nextIds(0).length, 0)
  assert.equal(cosid.nextIds(1).length, 1)
})

test('ids from every function are unique together', () => {
  const all = []
  for (let round = 0; round < 50; round++) {
    all.push(cosid.nextId(), BigInt(cosid.nextIdString()), ...cosid.nextIds(100))
  }
  assert.equal(assertUnique(assert, all), 50 * 102)
})

test('nextIdNumber() refuses a 63-bit layout with LAYOUT', () => {
  assert.throws(() => cosid.nextIdNumber(), (err) => {
    assert.ok(err instanceof Error)
    assert.equal(err.code, 'LAYOUT')
    assert.match(err.message, /at most 53 bits/)
    return true
  })
})

test('parse() splits an id into timestamp, slot and sequence', () => {
  const before = Date.now()
  const id = cosid.nextId()
  const p = cosid.parse(id)
  assert.ok(p.timestamp instanceof Date)
  assert.equal(p.timestamp.getTime(), p.timestampMs)
  assert.ok(Math.abs(p.timestampMs - before) < 5_000, `${p.timestamp.toISOString()} is now`)
  assert.equal(p.slot, cosid.status().slot)
  assert.equal(typeof p.sequence, 'number')
  // The three forms of one id parse alike.
  assert.deepEqual(cosid.parse(id.toString()), p)
  // Layout arithmetic by hand: 41 | 10 | 12 bits from 2019-12-24T16:00:00Z.
  const q = cosid.parse((5n << 22n) | (3n << 12n) | 7n)
  assert.equal(q.timestampMs, 1577203200000 + 5)
  assert.equal(q.tick, 5)
  assert.equal(q.slot, 3)
  assert.equal(q.sequence, 7)
  assert.deepEqual(cosid.parse(Number((5n << 22n) | (3n << 12n) | 7n)), q)
  // Another layout, by name.
  const s = cosid.parse((1n << 12n) | (2n << 7n) | 3n, 'js-safe')
  assert.deepEqual([s.tick, s.slot, s.sequence], [1, 2, 3])
})

test('friendly form: known value and round trip', () => {
  const id = (5n << 22n) | (3n << 12n) | 7n
  assert.equal(cosid.toFriendly(id), '20191224160000005-3-7')
  assert.equal(cosid.fromFriendly('20191224160000005-3-7'), id)
  const now = cosid.nextId()
  assert.equal(cosid.fromFriendly(cosid.toFriendly(now)), now)
  assert.throws(() => cosid.fromFriendly('20191224160000005-03-7'), { code: 'INVALID_ID' })
  assert.throws(() => cosid.fromFriendly('20191324160000005-3-7'), { code: 'INVALID_ID' })
  assert.throws(() => cosid.toFriendly(1n << 63n), { code: 'INVALID_ID' })
})

test('base-62 form: known values and round trip', () => {
  assert.equal(cosid.toBase62(0n), '00000000000')
  assert.equal(cosid.toBase62(61), '0000000000z')
  assert.equal(cosid.toBase62('18446744073709551615'), 'LygHa16AHYF')
  assert.equal(cosid.fromBase62('LygHa16AHYF'), 18446744073709551615n)
  assert.equal(cosid.fromBase62('00000000010'), 62n)
  const ids = cosid.nextIds(1000)
  const texts = Array.from(ids, (id) => cosid.toBase62(id))
  for (let i = 0; i < ids.length; i++) assert.equal(cosid.fromBase62(texts[i]), ids[i])
  // Fixed width, so text order is id order.
  assert.deepEqual([...texts].sort(), texts)
  assert.throws(() => cosid.fromBase62('zzzzzzzzzzz'), { code: 'INVALID_ID' })
  assert.throws(() => cosid.fromBase62('0000000001'), { code: 'INVALID_ID' })
  assert.throws(() => cosid.fromBase62('0000000001-'), { code: 'INVALID_ID' })
})

test('layout() describes presets and custom layouts', () => {
  assert.deepEqual(cosid.layout('js-safe'), {
    epochMs: 1577203200000,
    tick: 'millisecond',
    timestampBits: 41,
    slotBits: 5,
    sequenceBits: 7,
    totalBits: 53,
    capPerSecond: 128000,
    jsSafe: true,
  })
  const custom = cosid.layout({ epoch: 1700000000000, tick: 'second', timestampBits: 32, slotBits: 8, sequenceBits: 20 })
  assert.equal(custom.tick, 'second')
  assert.equal(custom.totalBits, 60)
  assert.equal(custom.capPerSecond, 1 << 20)
  assert.equal(cosid.layout().capPerSecond, 4096000)
})

test('shutdown() seals the runtime: later ids throw CLOSED', async () => {
  const last = cosid.nextId()
  const lastMs = await cosid.shutdown()
  assert.equal(typeof lastMs, 'number')
  assert.ok(lastMs >= cosid.parse(last).timestampMs)
  assert.equal(cosid.status().state, 'CLOSED')
  assert.throws(() => cosid.nextId(), { code: 'CLOSED' })
  assert.throws(() => cosid.nextIds(3), { code: 'CLOSED' })
  assert.throws(() => cosid.nextIdString(), { code: 'CLOSED' })
  assert.equal(await cosid.shutdown(), null, 'a second shutdown has nothing to release')
  assert.equal(cosid.shutdownSync(), null)
  // Pure conversions still work.
  assert.equal(cosid.toBase62(61n), '0000000000z')
  // The rule of every language: closed until configured again, then a new runtime starts.
  cosid.configure({ store })
  assert.ok(cosid.nextId() > last)
  assert.equal(cosid.status().state, 'ACTIVE')
})
