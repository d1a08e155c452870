'use strict'
// What bad input gets: TypeError for a wrong type, RangeError for a count out of range, and Error objects whose
// `code` names the failure (CONFIG, LAYOUT, INVALID_ID, EXHAUSTED, CLOSED) for a wrong value or a failed call.

const test = require('node:test')
const assert = require('node:assert/strict')
const { sqliteStore } = require('./fixtures/helpers.js')
const cosid = require('..')

cosid.configure({ store: 'memory:', namespace: 'errors-test' })

function typeError(fn, pattern) {
  assert.throws(fn, (err) => {
    assert.ok(err instanceof TypeError, `${err} is a TypeError`)
    assert.equal(err.code, 'ERR_INVALID_ARG_TYPE')
    assert.match(err.message, pattern)
    return true
  })
}

function coded(fn, code, pattern) {
  assert.throws(fn, (err) => {
    assert.ok(err instanceof Error)
    assert.ok(!(err instanceof TypeError), `${err} is not a TypeError`)
    assert.equal(err.code, code, err.message)
    if (pattern) assert.match(err.message, pattern)
    return true
  })
}

test('ids of the wrong type are TypeErrors that say what was expected and what came', () => {
  for (const fn of [cosid.parse, cosid.toFriendly, cosid.toBase62]) {
    typeError(() => fn(), /id must be a bigint, a number or a decimal string, got undefined/)
    typeError(() => fn(null), /got null/)
    typeError(() => fn(true), /got boolean true/)
    typeError(() => fn({}), /got object/)
    typeError(() => fn([1]), /got object/)
    typeError(() => fn(Symbol('x')), /got symbol/)
  }
})

test('ids of the right type but a wrong value are INVALID_ID', () => {
  coded(() => cosid.parse(-1), 'INVALID_ID', /-1 is not an id/)
  coded(() => cosid.parse(1.5), 'INVALID_ID', /whole number/)
  coded(() => cosid.parse(2 ** 60), 'INVALID_ID', /bigint or a decimal string/)
  coded(() => cosid.parse(NaN), 'INVALID_ID', /NaN/)
  coded(() => cosid.parse(-1n), 'INVALID_ID', /negative/)
  coded(() => cosid.parse(1n << 64n), 'INVALID_ID', /overflows 64 bits/)
  coded(() => cosid.parse(1n << 63n), 'INVALID_ID', /sign bit/)
  coded(() => cosid.parse(''), 'INVALID_ID', /empty/)
  coded(() => cosid.parse('+5'), 'INVALID_ID', /'\+'|"\+"/)
  coded(() => cosid.parse('05'), 'INVALID_ID', /leading zero/)
  coded(() => cosid.parse(' 5'), 'INVALID_ID')
  coded(() => cosid.parse('18446744073709551616'), 'INVALID_ID', /overflows/)
  coded(() => cosid.parse(1n << 53n, 'js-safe'), 'INVALID_ID', /above the layout/)
})

test('text arguments must be strings', () => {
  typeError(() => cosid.fromBase62(42), /text must be a string, got number 42/)
  typeError(() => cosid.fromFriendly(), /text must be a string, got undefined/)
  coded(() => cosid.fromFriendly('yesterday'), 'INVALID_ID')
})

test('nextIds(n): TypeError for a non-number, RangeError for a bad count', () => {
  typeError(() => cosid.nextIds('10'), /n must be a number, got string "10"/)
  typeError(() => cosid.nextIds(10n), /n must be a number, got bigint/)
  typeError(() => cosid.nextIds(), /got undefined/)
  for (const n of [-1, 1.5, NaN, Infinity, 2 ** 20 + 1]) {
    assert.throws(() => cosid.nextIds(n), (err) => {
      assert.ok(err instanceof RangeError)
      assert.equal(err.code, 'ERR_OUT_OF_RANGE')
      assert.match(err.message, /whole number from 0 to 1048576/)
      return true
    })
  }
})

test('options: TypeError for a wrong type, CONFIG for a wrong value or an unknown name', () => {
  typeError(() => cosid.configure('memory:'), /options must be an object, got string "memory:"/)
  typeError(() => cosid.configure({ store: 5 }), /options.store must be a string, got number 5/)
  typeError(() => cosid.configure({ ttl: true }), /options.ttl must be a number of milliseconds or a duration string/)
  typeError(() => cosid.configure({ bits: true }), /options.bits must be a number/)
  typeError(() => cosid.configure({ layout: 53 }), /layout must be 'millis', 'seconds', 'js-safe' or a layout object/)
  typeError(() => cosid.configure({ layout: { tick: 1 } }), /tick must be a string/)
  coded(() => cosid.configure({ tll: '30s' }), 'CONFIG', /option = "tll": one of store, namespace/)
  coded(() => cosid.configure({ ttl: 'soon' }), 'CONFIG', /invalid ttl = "soon"/)
  coded(() => cosid.configure({ ttl: -5 }), 'CONFIG', /invalid ttl = "-5"/)
  coded(() => cosid.configure({ ttl: 10 }), 'CONFIG', /from 30ms to 1day/)
  coded(() => cosid.configure({ bits: 11 }), 'CONFIG', /bits/)
  coded(() => cosid.configure({ bits: 2.5 }), 'CONFIG', /whole number/)
  coded(() => cosid.configure({ layout: 'nanos' }), 'LAYOUT', /millis, seconds or js-safe/)
  coded(() => cosid.configure({ layout: { slotBits: 0 } }), 'LAYOUT', /slot width is 0 bits/)
  coded(() => cosid.configure({ layout: { timestampBits: 50 } }), 'LAYOUT', /at most 63 bits/)
  coded(() => cosid.configure({ layout: { colour: 'red' } }), 'CONFIG', /layout field = "colour"/)
  coded(() => cosid.configure({ store: 'ftp://x' }), 'CONFIG', /unknown scheme/)
  coded(() => cosid.configure({ bits: '+3' }), 'CONFIG', /bits/)
  coded(() => cosid.configure({ onFork: 'ignore' }), 'CONFIG', /on_fork|onFork/)
  // Text is read by the one settings table, as the environment is; an empty string is the default.
  cosid.configure({ bits: '5', ttl: '2s', namespace: '' })
  coded(() => cosid.configure({ preferredSlot: 5000 }), 'CONFIG', /preferred_slot/)
  // undefined and null stand for "not given".
  cosid.configure({ ttl: undefined, bits: null })
  cosid.configure()
  cosid.configure(null)
  cosid.configure({ store: 'memory:', namespace: 'errors-test' })
})

test('a js-safe layout gets its 5 slot bits unless bits is given', () => {
  assert.doesNotThrow(() => cosid.configure({ store: 'memory:', layout: 'js-safe' }))
  coded(() => cosid.configure({ store: 'memory:', layout: 'js-safe', bits: 10 }), 'CONFIG', /bits/)
  cosid.configure({ store: 'memory:', namespace: 'errors-test' })
})

test('onEvent() takes a function', () => {
  typeError(() => cosid.onEvent(), /callback must be a function, got undefined/)
  typeError(() => cosid.onEvent('log'), /callback must be a function, got string/)
})

test('Runtime.create() rejects with EXHAUSTED when every slot is held', async () => {
  const options = { store: sqliteStore(), namespace: 'full', bits: 1, acquireTimeout: 100 }
  const holders = [await cosid.Runtime.create(options), await cosid.Runtime.create(options)]
  await assert.rejects(cosid.Runtime.create(options), (err) => {
    assert.ok(err instanceof Error)
    assert.equal(err.code, 'EXHAUSTED')
    return true
  })
  await Promise.all(holders.map((h) => h.close()))
  // A freed slot is taken again.
  const again = await cosid.Runtime.create(options)
  await again.close()
})

test('Runtime.create() with a namespace whose recorded bits differ rejects with NAMESPACE_MISMATCH', async () => {
  const store = sqliteStore()
  const first = await cosid.Runtime.create({ store, namespace: 'ns', bits: 3 })
  await assert.rejects(cosid.Runtime.create({ store, namespace: 'ns', bits: 4 }), { code: 'NAMESPACE_MISMATCH' })
  await first.close()
})

test('Runtime.create() checks its options before any work: TypeError and CONFIG are thrown at once', () => {
  typeError(() => cosid.Runtime.create({ namespace: 7 }), /options.namespace must be a string/)
  coded(() => cosid.Runtime.create({ ttl: '1h', tolerance: '20h' }), 'CONFIG', /tolerance/)
})

test('a closed Runtime throws CLOSED', async () => {
  const rt = await cosid.Runtime.create({ store: 'memory:' })
  rt.nextId()
  assert.equal(typeof (await rt.close()), 'number')
  coded(() => rt.nextId(), 'CLOSED', /shut down/)
  coded(() => rt.nextIds(2), 'CLOSED')
  assert.equal(await rt.close(), null)
  assert.equal(rt.closeSync(), null)
})

test('Runtime has no public constructor', () => {
  assert.throws(() => new cosid.Runtime())
})
