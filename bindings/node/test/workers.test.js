'use strict'
// worker_threads share the process-wide runtime: one lease, one slot, no id twice. A worker that exits closes
// nothing the others use.

const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { Worker } = require('node:worker_threads')
const { sqliteStore, nextEvent, assertUnique } = require('./fixtures/helpers.js')
const cosid = require('..')

const WORKER = path.join(__dirname, 'fixtures', 'worker.js')

function runWorker(workerData) {
  return new Promise((resolve, reject) => {
    const worker = new Worker(WORKER, { workerData })
    let result
    worker.once('message', (m) => (result = m))
    worker.once('error', reject)
    worker.once('exit', (code) => (code === 0 && result ? resolve(result) : reject(new Error(`worker exit ${code}`))))
  })
}

cosid.configure({ store: sqliteStore(), namespace: 'workers', ttl: 150 })

test('the main thread and 4 workers share one lease and issue unique ids', async () => {
  // The workers race to start the runtime; the main thread joins in.
  const workers = [1, 2, 3, 4].map(() => runWorker({ rounds: 200, batch: 250 }))
  const mine = []
  for (let i = 0; i < 200; i++) mine.push(cosid.nextId(), ...cosid.nextIds(250))
  const results = await Promise.all(workers)
  const main = cosid.status()
  for (const r of results) {
    assert.equal(r.slot, main.slot)
    assert.equal(r.incarnation, main.incarnation, 'one runtime, started once')
  }
  const all = [...mine]
  for (const r of results) for (const id of r.ids) all.push(id)
  assert.equal(assertUnique(assert, all), 5 * 200 * 251)
  for (const id of all) assert.equal(cosid.parse(id).slot, main.slot)
})

test('workers that exit, one with a live subscription, leave the shared runtime running', async () => {
  const before = cosid.status().incarnation
  await Promise.all([runWorker({ rounds: 10, batch: 10, subscribe: true }), runWorker({ rounds: 10, batch: 10 })])
  // Renewals keep coming (and reach no dead thread), ids keep coming.
  await nextEvent(cosid.onEvent, 'RENEWED')
  await nextEvent(cosid.onEvent, 'RENEWED')
  const s = cosid.status()
  assert.equal(s.state, 'ACTIVE')
  assert.equal(s.incarnation, before)
  assert.equal(typeof cosid.nextId(), 'bigint')
})

test('a Runtime created in a worker is its own lease', async () => {
  const code = `
    const { parentPort } = require('node:worker_threads')
    const { Runtime } = require(${JSON.stringify(path.resolve(__dirname, '..'))})
    Runtime.create({ store: ${JSON.stringify(sqliteStore())}, namespace: 'w' }).then(async (rt) => {
      parentPort.postMessage({ slot: rt.status().slot, id: rt.nextId() })
      await rt.close()
    })`
  const result = await new Promise((resolve, reject) => {
    const w = new Worker(code, { eval: true })
    w.once('message', resolve)
    w.once('error', reject)
  })
  assert.equal(result.slot, 0)
  assert.equal(typeof result.id, 'bigint')
  assert.notEqual(cosid.status().slot, undefined)
})
