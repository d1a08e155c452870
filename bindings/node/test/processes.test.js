'use strict'
// Child processes and cluster workers each get their own runtime and slot; ids stay unique across them, and a
// process that exits releases its slot.

const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { fork } = require('node:child_process')
const { sqliteStore, runNode, assertUnique } = require('./fixtures/helpers.js')

const CHILD = path.join(__dirname, 'fixtures', 'child.js')
const env = { ...process.env, COSID_STORE: sqliteStore(), COSID_NAMESPACE: 'processes' }

/** Every child forked, killed after each test so a failed assertion cannot leave one running. */
const children = new Set()
test.afterEach(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  children.clear()
})

/** Forks a child; resolves to { child, report } once it has reported, and records its exit. */
function start() {
  return new Promise((resolve, reject) => {
    const child = fork(CHILD, { env, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
    children.add(child)
    child.exited = new Promise((done) => child.once('exit', (code) => done(code)))
    child.once('message', (report) => resolve({ child, report }))
    child.once('error', reject)
    child.once('exit', (code) => reject(new Error(`child exited with ${code} before reporting`)))
  })
}

test('4 child processes at once: 4 slots, unique ids; each releases its slot at exit', async () => {
  const running = await Promise.all([start(), start(), start(), start()])
  const slots = running.map((r) => r.report.slot)
  assert.deepEqual([...slots].sort(), [0, 1, 2, 3])
  assert.equal(assertUnique(assert, running.flatMap((r) => r.report.ids)), 4 * 5000)

  // Two leave through process.exit(), two when their event loop empties.
  running.forEach(({ child }, i) => child.send(i % 2 ? 'exit' : 'drain'))
  assert.deepEqual(await Promise.all(running.map(({ child }) => child.exited)), [0, 0, 0, 0])

  // Released, not left to expire (the ttl is 30 s): the next process gets the lowest slot, and its ids come
  // after everything the earlier holders issued.
  const next = await start()
  assert.equal(next.report.slot, 0)
  assert.equal(assertUnique(assert, [...running.flatMap((r) => r.report.ids), ...next.report.ids]), 5 * 5000)
  next.child.send('exit')
  assert.equal(await next.child.exited, 0)
})

test('cluster workers each get their own slot', async () => {
  const r = await runNode([path.join(__dirname, 'fixtures', 'cluster.js'), '3'], {
    env: { COSID_STORE: sqliteStore(), COSID_NAMESPACE: 'cluster', IDS: '3000' },
  })
  assert.equal(r.code, 0, r.stderr)
  const reports = JSON.parse(r.stdout)
  assert.equal(reports.length, 3)
  assert.equal(new Set(reports.map((w) => w.pid)).size, 3)
  assert.deepEqual(reports.map((w) => w.slot).sort(), [0, 1, 2])
  assert.equal(assertUnique(assert, reports.flatMap((w) => w.ids)), 3 * 3000)
})
