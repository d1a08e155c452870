'use strict'
// A batch of ids as strings, for JSON (which throws on a bigint), and the error class and code union to narrow
// on: `err instanceof CosidError`, then `err.code`.

const test = require('node:test')
const assert = require('node:assert/strict')
const { readFileSync } = require('node:fs')
const path = require('node:path')
const { platformName } = require('../platform.js')
const cosid = require('..')

cosid.configure({ store: 'memory:', namespace: 'json-test' })

function increasing(texts) {
  const ids = texts.map(BigInt)
  for (let i = 1; i < ids.length; i++) assert.ok(ids[i] > ids[i - 1], `${ids[i]} after ${ids[i - 1]}`)
  return ids
}

test('nextIdStrings(n): a batch of decimal ids, in order, that JSON.stringify takes', () => {
  assert.throws(() => JSON.stringify({ ids: [cosid.nextId()] }), TypeError) // why it exists
  const before = cosid.nextId()
  const texts = cosid.nextIdStrings(5000)
  assert.equal(texts.length, 5000)
  for (const t of texts) assert.match(t, /^[1-9][0-9]*$/)
  const ids = increasing(texts)
  assert.ok(ids[0] > before && cosid.nextId() > ids[ids.length - 1])
  assert.equal(new Set(texts).size, texts.length)
  assert.deepEqual(JSON.parse(JSON.stringify({ ids: texts })).ids, texts)
  assert.deepEqual(cosid.nextIdStrings(0), [])
  // The same count rules as nextIds(n).
  assert.throws(() => cosid.nextIdStrings(-1), RangeError)
  assert.throws(() => cosid.nextIdStrings(1048577), RangeError)
  assert.throws(() => cosid.nextIdStrings('3'), TypeError)
})

test('Runtime#nextIdStrings(n), and CLOSED after close() as a CosidError', async () => {
  const rt = await cosid.Runtime.create({ store: 'memory:', namespace: 'json-rt' })
  const texts = rt.nextIdStrings(100)
  increasing(texts)
  for (const t of texts) assert.equal(rt.parse(t).slot, rt.status().slot)
  await rt.close()
  assert.throws(
    () => rt.nextIdStrings(1),
    (err) => err instanceof cosid.CosidError && err.code === 'CLOSED',
  )
})

test('every error cosid throws is a CosidError; TypeErrors, RangeErrors and foreign errors are not', () => {
  assert.throws(
    () => cosid.configure({ ttl: 'forever' }),
    (err) => err instanceof cosid.CosidError && err instanceof Error && err.code === 'CONFIG',
  )
  assert.throws(
    () => cosid.parse(-1n),
    (err) => err instanceof cosid.CosidError && err.code === 'INVALID_ID',
  )
  assert.throws(() => cosid.parse({}), (err) => err instanceof TypeError && !(err instanceof cosid.CosidError))
  assert.throws(() => cosid.nextIds(-1), (err) => err instanceof RangeError && !(err instanceof cosid.CosidError))
  for (const other of [new Error('x'), Object.assign(new Error('x'), { code: 'ENOENT' }), { code: 'CONFIG' }, null, 'CONFIG']) {
    assert.ok(!(other instanceof cosid.CosidError), String(other))
  }
  const made = new cosid.CosidError('CLOSED', 'made by hand', { cause: 'test' })
  assert.ok(made instanceof cosid.CosidError && made instanceof Error)
  assert.equal(made.code, 'CLOSED')
  assert.equal(made.name, 'CosidError')
  assert.equal(made.cause, 'test')
})

test("index.d.ts's ErrorCode lists exactly the codes the addon throws", () => {
  const dts = readFileSync(path.join(__dirname, '..', 'index.d.ts'), 'utf8')
  const union = dts.match(/^export type ErrorCode =\n((?:\s+\| '[A-Z0-9_]+'\n)+)/m)
  assert.ok(union, 'index.d.ts declares ErrorCode as a union of string literals')
  const declared = [...union[1].matchAll(/'([A-Z0-9_]+)'/g)].map((m) => m[1]).sort()
  const addon = require(path.join(__dirname, '..', `cosid.${platformName()}.node`))
  assert.deepEqual(declared, [...addon.__errorCodes()].sort())
})
