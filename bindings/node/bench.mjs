// Benchmark harness: prints figures, asserts nothing.
//
//   npm run bench                 (after npm ci && npm run build; peers are devDependencies)
//   node bench.mjs --quick        (fewer rounds)
//
// What it measures, in one process, beside the peers:
//   - ns per id for nextId() in bursts below the cap: bursts of 1000 calls, each starting on a fresh millisecond,
//     so no call waits for the next tick (the cap is 4096 ids per millisecond per slot in the default layout);
//   - ns per id for nextIds(n), same bursts;
//   - sustained ids per second for one second of back-to-back calls, as a percent of the cap (where the cap, not
//     the call, is the limit);
//   - the same bursts for @sapphire/snowflake, nodejs-snowflake, flake-idgen and crypto.randomUUID().
// Targets: at most 30 ns per id for nextId(), at most 15 ns per id for nextIds.

import { randomUUID } from 'node:crypto'
import { createRequire } from 'node:module'
import * as cosid from './index.mjs'

const require = createRequire(import.meta.url)
const quick = process.argv.includes('--quick')
const BURST = 1000
const ROUNDS = quick ? 200 : 2000

cosid.configure({ store: process.env.COSID_STORE ?? 'memory:', namespace: 'bench' })
await cosid.ready()
const cap = cosid.layout().capPerSecond

/** Spins until the millisecond changes, so the next burst starts on a fresh tick. */
function nextMillisecond() {
  const now = Date.now()
  while (Date.now() === now);
}

/** Median ns per id over ROUNDS bursts; `burst()` makes `perBurst` ids. */
function bursts(burst, perBurst) {
  for (let i = 0; i < 50; i++) {
    nextMillisecond()
    burst() // warm up
  }
  const samples = []
  for (let r = 0; r < ROUNDS; r++) {
    nextMillisecond()
    const t0 = process.hrtime.bigint()
    burst()
    samples.push(Number(process.hrtime.bigint() - t0) / perBurst)
  }
  samples.sort((a, b) => a - b)
  return { median: samples[samples.length >> 1], p10: samples[Math.floor(samples.length * 0.1)] }
}

/** Ids per second over about a second of back-to-back calls. */
function sustained(call, perCall) {
  const t0 = process.hrtime.bigint()
  const end = t0 + (quick ? 250_000_000n : 1_000_000_000n)
  let ids = 0
  let now = t0
  while (now < end) {
    for (let i = 0; i < 100; i++) call()
    ids += 100 * perCall
    now = process.hrtime.bigint()
  }
  return ids / (Number(now - t0) / 1e9)
}

function loop(fn, n) {
  return () => {
    for (let i = 0; i < n; i++) fn()
  }
}

const rows = []
function row(name, { median, p10 }, note = '') {
  rows.push([name, median.toFixed(1), p10.toFixed(1), note])
}

// cosid: the free functions (the hot path), then the class method for comparison.
const nextId = cosid.nextId
row('cosid nextId()', bursts(loop(nextId, BURST), BURST), 'bigint')
row('cosid nextIdString()', bursts(loop(cosid.nextIdString, BURST), BURST), 'string')
for (const n of [1000, 4000]) {
  row(`cosid nextIds(${n})`, bursts(() => cosid.nextIds(n), n), 'per id, BigUint64Array')
}
const rt = await cosid.Runtime.create({ store: 'memory:', namespace: 'bench-class' })
row('cosid Runtime#nextId()', bursts(loop(() => rt.nextId(), BURST), BURST), 'own function')
const safe = await cosid.Runtime.create({ store: 'memory:', namespace: 'bench-safe', layout: 'js-safe' })
row('cosid Runtime#nextIdNumber()', bursts(loop(() => safe.nextIdNumber(), 100), 100), 'js-safe: 128 ids/ms cap')

// Peers, each in its most natural form.
async function peer(name, make, note) {
  let next
  try {
    next = await make()
  } catch (err) {
    rows.push([name, '-', '-', `not installed (${err.code || err.message}); npm ci installs it`])
    return
  }
  row(name, bursts(loop(next, BURST), BURST), note)
}
await peer(
  '@sapphire/snowflake',
  () => {
    const { Snowflake } = require('@sapphire/snowflake')
    const sf = new Snowflake(1577203200000n)
    return () => sf.generate()
  },
  'bigint',
)
await peer(
  'nodejs-snowflake',
  () => {
    const { Snowflake } = require('nodejs-snowflake')
    const sf = new Snowflake({ custom_epoch: 1577203200000, instance_id: 1 })
    return () => sf.getUniqueID()
  },
  'bigint (wasm)',
)
await peer(
  'flake-idgen',
  () => {
    const FlakeId = require('flake-idgen')
    const g = new FlakeId({ epoch: 1577203200000 })
    return () => g.next()
  },
  '8-byte Buffer',
)
await peer('crypto.randomUUID()', () => randomUUID, '36-char string, not time-ordered')
// The machine's state in this run: a native call of Node's own that returns a bigint.
row('process.hrtime.bigint()', bursts(loop(process.hrtime.bigint, BURST), BURST), 'reference: Node\'s own native bigint')

console.log(`cosid ${process.versions.node ? `on Node ${process.version}` : ''}, ${ROUNDS} bursts each, burst = ${BURST} ids`)
console.log('ns per id (median, p10), bursts below the cap:')
const width = Math.max(...rows.map((r) => r[0].length))
for (const [name, median, p10, note] of rows) {
  console.log(`  ${name.padEnd(width)}  ${median.padStart(7)}  ${p10.padStart(7)}  ${note}`)
}

const single = sustained(nextId, 1)
const batch = sustained(() => cosid.nextIds(4096), 4096)
console.log(`sustained, cap ${cap.toLocaleString('en')} ids/s per slot:`)
console.log(`  nextId()       ${Math.round(single).toLocaleString('en').padStart(12)} ids/s  ${((100 * single) / cap).toFixed(1)}% of the cap`)
console.log(`  nextIds(4096)  ${Math.round(batch).toLocaleString('en').padStart(12)} ids/s  ${((100 * batch) / cap).toFixed(1)}% of the cap`)
console.log('targets: nextId() <= 30 ns per id, nextIds <= 15 ns per id (bursts)')

await rt.close()
await safe.close()
