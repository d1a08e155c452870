'use strict'
// A Rust panic must never abort the Node process: every entry point of the addon catches it and throws (or
// rejects with) an Error whose code is 'PANIC'. The addon's hidden probes panic on purpose in each kind of entry
// point; the source check makes sure no export of src/ bypasses the guard they share.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { PACKAGE, runNode } = require('./fixtures/helpers.js')
const { platformName } = require('../platform.js')
// The probes are left out of the package's exports (index.js): they are on the addon itself.
const ADDON = path.join(PACKAGE, `cosid.${platformName()}.node`)
const cosid = require(ADDON)

function isPanic(err, where) {
  assert.ok(err instanceof Error, `${err} is an Error`)
  assert.equal(err.code, 'PANIC', err.message)
  assert.match(err.message, new RegExp(`caught a panic .*probe: ${where}`))
  return true
}

test('a panic in a synchronous call is a catchable Error with code PANIC', () => {
  assert.throws(() => cosid.__panicForTest('sync'), (err) => isPanic(err, 'sync'))
  // The addon still works afterwards.
  assert.equal(typeof cosid.toBase62(1n), 'string')
})

test('a panic in a function the addon handed out is a catchable Error with code PANIC', () => {
  const probe = cosid.__panicForTest('callback')
  assert.equal(typeof probe, 'function')
  assert.throws(() => probe(), (err) => isPanic(err, 'callback'))
})

test('a panic in either half of async work rejects the promise with code PANIC', async () => {
  await assert.rejects(cosid.__panicAsyncForTest('compute'), (err) => isPanic(err, 'compute'))
  await assert.rejects(cosid.__panicAsyncForTest('resolve'), (err) => isPanic(err, 'resolve'))
  await cosid.__panicAsyncForTest('none')
})

test('the process survives a panic and exits normally', async () => {
  const script = `
    const cosid = require(${JSON.stringify(ADDON)})
    try { cosid.__panicForTest('sync') } catch (e) { console.log('caught ' + e.code) }
    cosid.__panicAsyncForTest('compute').catch((e) => console.log('rejected ' + e.code))
  `
  const { code, signal, stdout, stderr } = await runNode(['-e', script])
  assert.equal(signal, null, stderr)
  assert.equal(code, 0, stderr)
  assert.match(stdout, /caught PANIC/)
  assert.match(stdout, /rejected PANIC/)
})

// Every function napi-rs exports, every closure handed to JavaScript and every async task goes through
// src/guard.rs: a new entry point that forgets it fails here, before a bug in it can abort a host process.
test('every entry point of the addon goes through the panic guard', () => {
  const src = path.join(__dirname, '..', 'src')
  const unguarded = []
  let exports = 0
  for (const file of fs.readdirSync(src).filter((f) => f.endsWith('.rs'))) {
    const text = fs.readFileSync(path.join(src, file), 'utf8')
    const lines = text.split('\n')
    for (let i = 0; i < lines.length; i++) {
      if (!/^\s*#\[napi(\]|\()/.test(lines[i])) continue
      // The item the attribute is on: skip further attributes and doc comments.
      let j = i + 1
      while (j < lines.length && /^\s*(#\[|\/\/\/|\)\]|[a-z_]+ = |"|ts_)/.test(lines[j])) j++
      const fn = /^(\s*)pub fn (\w+)/.exec(lines[j])
      if (!fn) continue
      exports++
      // Its body: up to the closing brace at the item's indentation.
      let k = j
      while (k < lines.length && lines[k] !== `${fn[1]}}`) k++
      const body = lines.slice(j, k).join('\n')
      if (!/\bcall\(/.test(body)) unguarded.push(`${file}: ${fn[2]}`)
    }
    if (/impl(<[^>]*>)? Task for/.test(text) && file !== 'guard.rs') {
      unguarded.push(`${file}: implements napi's Task directly (implement guard::Job, run it as Guarded)`)
    }
    for (const m of text.matchAll(/\.create_function_from_closure[^]*?\{/g)) {
      const after = text.slice(m.index, m.index + m[0].length + 80)
      if (!/closure\(/.test(after.slice(m[0].length))) unguarded.push(`${file}: a closure without guard::closure`)
    }
  }
  assert.ok(exports >= 30, `found only ${exports} exported functions: the check no longer reads the sources`)
  assert.deepEqual(unguarded, [])
})
