'use strict'
// Runtime: explicit runtimes with their own leases, their ids, layouts and events.

const test = require('node:test')
const assert = require('node:assert/strict')
const { sqliteStore, runNode, nextEvent, assertUnique } = require('./fixtures/helpers.js')
const { Runtime } = require('..')

test('two runtimes on one store take two slots and never share an id', async () => {
  const options = { store: sqliteStore(), namespace: 'two' }
  const [a, b] = [await Runtime.create(options), await Runtime.create(options)]
  try {
    assert.ok(a instanceof Runtime)
    const [sa, sb] = [a.status(), b.status()]
    assert.notEqual(sa.slot, sb.slot)
    assert.notEqual(sa.incarnation, sb.incarnation)
    const ids = []
    for (let i = 0; i < 20; i++) ids.push(a.nextId(), b.nextId(), ...a.nextIds(500), ...b.nextIds(500))
    assert.equal(assertUnique(assert, ids), 20 * 1002)
    assert.equal(a.parse(a.nextId()).slot, sa.slot)
    assert.equal(b.parse(b.nextIdString()).slot, sb.slot)
  } finally {
    await a.close()
    b.closeSync()
  }
  assert.equal(a.status().state, 'CLOSED')
})

test('a js-safe runtime issues exact numbers', async () => {
  const rt = await Runtime.create({ store: 'memory:', layout: 'js-safe' })
  try {
    assert.equal(rt.layout().totalBits, 53)
    assert.equal(rt.layout().jsSafe, true)
    let last = 0
    for (let i = 0; i < 5000; i++) {
      const id = rt.nextIdNumber()
      assert.equal(typeof id, 'number')
      assert.ok(Number.isSafeInteger(id), `${id} is a safe integer`)
      assert.ok(id > last)
      last = id
    }
    assert.equal(BigInt(last) < rt.nextId(), true)
    const parts = rt.parse(last)
    assert.equal(parts.slot, rt.status().slot)
    assert.ok(Math.abs(parts.timestampMs - Date.now()) < 5000)
    assert.equal(rt.fromFriendly(rt.toFriendly(last)), BigInt(last))
    // The same id in the 63-bit layout means something else entirely.
    assert.notDeepEqual(require('..').parse(last, 'millis'), parts)
    // A plain function of its own, as rt.nextId (docs/node.md, "Performance"): detached calls work.
    assert.ok(Object.hasOwn(rt, 'nextIdNumber'))
    const next = rt.nextIdNumber
    assert.ok(next() > last && Number.isSafeInteger(next()))
  } finally {
    await rt.close()
  }
  assert.throws(() => rt.nextIdNumber(), (e) => e.code === 'CLOSED')
  // A 63-bit runtime keeps the method, which refuses its layout.
  const wide = await Runtime.create({ store: 'memory:' })
  try {
    assert.ok(!Object.hasOwn(wide, 'nextIdNumber'))
    assert.throws(() => wide.nextIdNumber(), (e) => e.code === 'LAYOUT')
  } finally {
    await wide.close()
  }
})

test('a custom layout: second ticks', async () => {
  const rt = await Runtime.create({
    store: 'memory:',
    layout: { tick: 'second', timestampBits: 32, slotBits: 8, sequenceBits: 20 },
    bits: 8,
  })
  try {
    const id = rt.nextId()
    const p = rt.parse(id)
    assert.equal(p.timestampMs % 1000, 0)
    assert.equal(rt.toFriendly(id).slice(14, 17), '000')
    assert.equal(rt.layout().capPerSecond, 1 << 20)
  } finally {
    await rt.close()
  }
})

test('events: RENEWED while running, RELEASED at close, none after unsubscribing', async () => {
  const rt = await Runtime.create({ store: 'memory:', ttl: 150 })
  const afterOff = []
  const renewed = await nextEvent((cb) => rt.onEvent(cb), 'RENEWED')
  assert.equal(renewed.slot, rt.status().slot)
  assert.ok(renewed.expiresAtMs > 0 && renewed.ceilingMs >= renewed.expiresAtMs)
  assert.match(renewed.message, /renewed slot \d+/)

  const off = rt.onEvent((e) => afterOff.push(e.type))
  off()
  off() // a second call is harmless
  const released = nextEvent((cb) => rt.onEvent(cb), 'RELEASED')
  const id = rt.nextId()
  const last = await rt.close()
  const event = await released
  assert.equal(event.slot, rt.status().slot)
  assert.equal(event.lastIssuedMs, last)
  assert.ok(last >= rt.parse(id).timestampMs)
  assert.ok(!afterOff.includes('RELEASED'), `unsubscribed callback got ${afterOff}`)
})

test('a subscription does not keep the process alive', async () => {
  const r = await runNode(
    [
      '-e',
      `const cosid = require('.')
       cosid.configure({ store: 'memory:', ttl: 150 })
       cosid.onEvent(() => {})
       cosid.ready().then(() => console.log('started'))`,
    ],
    { timeoutMs: 30_000 },
  )
  assert.equal(r.code, 0, r.stderr)
  assert.equal(r.stdout.trim(), 'started')
})

test('an exception in an event callback reaches uncaughtException', async () => {
  const r = await runNode(
    [
      '-e',
      `const cosid = require('.')
       process.on('uncaughtException', (e) => { console.log('caught ' + e.message); process.exit(0) })
       cosid.Runtime.create({ store: 'memory:', ttl: 150 }).then((rt) => {
         rt.onEvent(() => { throw new Error('boom') })
         setTimeout(() => {}, 20_000)
       })`,
    ],
    { timeoutMs: 30_000 },
  )
  assert.equal(r.code, 0, r.stderr)
  assert.equal(r.stdout.trim(), 'caught boom')
})

test('status() reports the lease', async () => {
  const rt = await Runtime.create({ store: 'memory:', namespace: 'status', ownerKey: 'svc-a', preferredSlot: 7 })
  try {
    const s = rt.status()
    assert.equal(s.namespace, 'status')
    assert.equal(s.store, 'memory')
    assert.equal(s.ownerKey, 'svc-a')
    assert.equal(s.slot, 7)
    assert.equal(s.state, 'ACTIVE')
    assert.equal(s.lastIssuedMs, undefined)
    rt.nextId()
    assert.equal(typeof rt.status().lastIssuedMs, 'number')
  } finally {
    await rt.close()
  }
})

// `rt.nextId` is a function of its own (docs/node.md, "Speed"), not napi-rs's method: what the method did must
// still hold, and the function must keep its runtime alive on its own.
test('rt.nextId works detached, throws CLOSED after close, and keeps its runtime alive', async () => {
  const rt = await Runtime.create({ store: 'memory:', namespace: 'own-next-id' })
  assert.ok(Object.hasOwn(rt, 'nextId'))
  assert.ok(!Object.keys(rt).includes('nextId'), 'nextId is not enumerable')
  const next = rt.nextId
  const ids = [rt.nextId(), next(), next.call(undefined), rt.nextId(1, 2, 3)]
  for (const id of ids) assert.equal(typeof id, 'bigint')
  assert.equal(assertUnique(assert, ids), 4)
  assert.equal(rt.parse(next()).slot, rt.status().slot)
  await rt.close()
  assert.throws(() => next(), (e) => e instanceof Error && e.code === 'CLOSED')
  assert.throws(() => rt.nextId(), (e) => e instanceof Error && e.code === 'CLOSED')

  // In a child with the collector exposed: the runtime object is collected (its finalizer ran), and the
  // detached function still issues on its lease, which the function alone keeps.
  const r = await runNode(
    [
      '--expose-gc',
      '-e',
      `const { Runtime } = require('.')
       ;(async () => {
         let collected = 'no'
         const registry = new FinalizationRegistry((what) => (collected = what))
         await (async () => {
           const rt = await Runtime.create({ store: 'memory:', namespace: 'detached' })
           globalThis.next = rt.nextId
           registry.register(rt, 'rt')
         })()
         for (let i = 0; i < 100 && collected === 'no'; i++) {
           gc()
           await new Promise((resolve) => setTimeout(resolve, 20))
         }
         gc()
         const ids = new Set()
         for (let i = 0; i < 10000; i++) ids.add(next())
         console.log(JSON.stringify({ collected, unique: ids.size }))
       })()`,
    ],
    { timeoutMs: 30_000 },
  )
  assert.equal(r.code, 0, r.stderr)
  assert.deepEqual(JSON.parse(r.stdout), { collected: 'rt', unique: 10000 })
})

test('the process-wide nextId is a plain function: detached calls work', async () => {
  const r = await runNode(['-e', `const { nextId } = require('.'); const f = nextId; console.log(typeof f.call(null), typeof f())`], {
    env: { COSID_STORE: 'memory:' },
  })
  assert.equal(r.code, 0, r.stderr)
  assert.equal(r.stdout.trim(), 'bigint bigint')
})
