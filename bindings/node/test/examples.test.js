'use strict'
// Runs every example under examples/node/ as a user would after `npm install` there, and checks what it prints.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { PACKAGE, sqliteStore, runNode } = require('./fixtures/helpers.js')

const EXAMPLES = path.resolve(PACKAGE, '..', '..', 'examples', 'node')

// What `npm install` in examples/node does with its "file:" dependency: link node_modules/cosid to the package.
test.before(() => {
  const link = path.join(EXAMPLES, 'node_modules', 'cosid')
  if (fs.existsSync(link) && fs.realpathSync(link) === fs.realpathSync(PACKAGE)) return
  fs.rmSync(link, { recursive: true, force: true })
  fs.mkdirSync(path.dirname(link), { recursive: true })
  fs.symlinkSync(path.relative(path.dirname(link), PACKAGE), link, 'dir')
})

async function run(file, args = []) {
  const r = await runNode([file, ...args], { cwd: EXAMPLES, env: { COSID_STORE: sqliteStore() } })
  assert.equal(r.code, 0, `${file} failed:\n${r.stdout}\n${r.stderr}`)
  return r.stdout
}

test('every example has a test', () => {
  const examples = fs.readdirSync(EXAMPLES).filter((f) => /\.(c?js|mjs)$/.test(f)).sort()
  assert.deepEqual(examples, ['http-server.js', 'js-safe.js', 'quickstart.js', 'runtime.mjs', 'workers.mjs'])
})

test('quickstart.js', async () => {
  const out = await run('quickstart.js')
  assert.match(out, /^id\s+\d+n$/m)
  assert.match(out, /^as string\s+\d+$/m)
  assert.match(out, /^friendly\s+\d{17}-\d+-\d+$/m)
  assert.match(out, /^base-62\s+[0-9A-Za-z]{11}$/m)
  assert.match(out, /^round trip true$/m)
  assert.match(out, /^json\s+\{"orderId":"\d+"\}$/m)
  assert.match(out, /^error\s+INVALID_ID - /m)
})

test('runtime.mjs', async () => {
  const out = await run('runtime.mjs')
  assert.match(out, /^event RENEWED slot \d+$/m)
  assert.match(out, /^closed; last millisecond used \d{4}-\d\d-\d\dT/m)
})

test('js-safe.js', async () => {
  const out = await run('js-safe.js')
  assert.match(out, /^id \d+ true$/m)
  assert.match(out, /^json \{"id":\d+\} true$/m)
})

test('workers.mjs', async () => {
  const out = await run('workers.mjs')
  assert.match(out, /^slots (\d+) \1 \1 \1 \1$/m)
  assert.match(out, /^ids 50000 unique of 50000$/m)
})

test('http-server.js', async () => {
  const out = await run('http-server.js')
  assert.match(out, /^response \{"ids":\["\d+","\d+","\d+"\]\}$/m)
  assert.match(out, /^slots (\d+) \1 \1$/m)
})
