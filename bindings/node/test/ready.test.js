'use strict'
// ready() acquires the slot off the event loop: while the start waits for a slot of a full namespace, timers
// keep firing; it resolves once a holder releases one.

const test = require('node:test')
const assert = require('node:assert/strict')
const { sqliteStore } = require('./fixtures/helpers.js')
const cosid = require('..')

test('ready() waits for a slot without blocking the event loop', async () => {
  const store = sqliteStore()
  const options = { store, namespace: 'ready-test', bits: 1 }
  // Two holders take both slots of the 1-bit namespace.
  const a = await cosid.Runtime.create(options)
  const b = await cosid.Runtime.create(options)
  assert.deepEqual([a.status().slot, b.status().slot].sort(), [0, 1])

  cosid.configure({ ...options, ttl: 600, acquireTimeout: '30s' })
  let settled = false
  const started = cosid.ready().then(() => (settled = true))
  let ticks = 0
  for (let i = 0; i < 5; i++) {
    await new Promise((resolve) => setTimeout(resolve, 20))
    ticks++
  }
  assert.equal(ticks, 5, 'timers fired while the start waited')
  assert.equal(settled, false, 'no slot is free yet')
  assert.equal(cosid.status(), null)

  const freed = a.status().slot
  await a.close()
  await started
  assert.equal(cosid.status().slot, freed)
  assert.equal(cosid.parse(cosid.nextId()).slot, freed)
  await b.close()
})

test('a failed start rejects with the error code, and a later call tries again', async () => {
  // A separate process: this one's runtime has started.
  const { runNode } = require('./fixtures/helpers.js')
  const script = `
    const cosid = require('.')
    const store = ${JSON.stringify(sqliteStore())}
    ;(async () => {
      const opts = { store, namespace: 'full', bits: 1 }
      const holders = [await cosid.Runtime.create(opts), await cosid.Runtime.create(opts)]
      cosid.configure({ ...opts, ttl: 300, acquireTimeout: 150 })
      const err = await cosid.ready().then(() => null, (e) => e)
      console.log(JSON.stringify({ isError: err instanceof Error, code: err && err.code, message: err && err.message }))
      try { cosid.nextId() } catch (e) { console.log(JSON.stringify({ code: e.code })) }
      await holders[0].close()
      await cosid.ready()
      console.log(JSON.stringify({ slot: cosid.status().slot }))
    })()
  `
  const r = await runNode(['-e', script])
  assert.equal(r.code, 0, r.stderr)
  const [rejected, thrown, after] = r.stdout.trim().split('\n').map((l) => JSON.parse(l))
  assert.equal(rejected.isError, true)
  assert.equal(rejected.code, 'EXHAUSTED')
  assert.equal(thrown.code, 'EXHAUSTED')
  assert.equal(typeof after.slot, 'number')
})
