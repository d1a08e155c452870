'use strict'
// The addon on every network store it carries (`stores()`), against real servers:
// COSID_TEST_{REDIS,POSTGRES,MYSQL,ETCD,ZOOKEEPER,MONGODB}_URL point at them, and COSID_TEST_HTTP_URL at a
// `cosid serve` (the lease proxy), which every case also runs through with the `http://` store (.ci/node.sh starts
// each one that is not set, with the scripts of .ci/services/). A store whose variable is unset is skipped, saying
// so. A store the addon does not carry is refused with CONFIG, saying how to reach it, before any connection.

const test = require('node:test')
const assert = require('node:assert/strict')
const { randomUUID } = require('node:crypto')
const { runNode, assertUnique } = require('./fixtures/helpers.js')
const { Runtime, stores } = require('..')

// Each store: its name, the variable with its server's URL, and a URL that needs no server.
const STORES = [
  ['redis', 'COSID_TEST_REDIS_URL', 'redis://127.0.0.1:1/0'],
  ['postgres', 'COSID_TEST_POSTGRES_URL', 'postgres://u:p@127.0.0.1:1/db'],
  ['mysql', 'COSID_TEST_MYSQL_URL', 'mysql://u:p@127.0.0.1:1/db'],
  ['etcd', 'COSID_TEST_ETCD_URL', 'etcd://127.0.0.1:1'],
  ['zookeeper', 'COSID_TEST_ZOOKEEPER_URL', 'zookeeper://127.0.0.1:1'],
  ['mongodb', 'COSID_TEST_MONGODB_URL', 'mongodb://127.0.0.1:1/ids'],
  ['http', 'COSID_TEST_HTTP_URL', 'http://127.0.0.1:1'],
]

const namespace = () => `node-${randomUUID().slice(0, 12)}`

test('stores() lists what the addon carries, memory, SQLite and http:// first', () => {
  const built = stores()
  assert.deepEqual(built.slice(0, 3), ['memory', 'sqlite', 'http'])
  for (const s of built.slice(3)) assert.ok(STORES.some(([kind]) => kind === s), s)
})

for (const [kind, variable, offline] of STORES) {
  if (!stores().includes(kind)) {
    test(`${kind}: not in this addon, refused with CONFIG before any connection`, async () => {
      await assert.rejects(Runtime.create({ store: offline, acquireTimeout: 30_000 }), (e) => {
        assert.equal(e.code, 'CONFIG')
        assert.match(e.message, new RegExp(`the ${kind} store is not in this build`))
        assert.match(e.message, /cosid serve/)
        return true
      })
    })
    continue
  }
  const url = process.env[variable]
  const skip = url ? false : `${variable} is not set (bash .ci/services/ starts a server)`

  test(`${kind}: two runtimes take two slots, never share an id, and release on close`, { skip }, async () => {
    const options = { store: url, namespace: namespace(), bits: 4 }
    const [a, b] = [await Runtime.create(options), await Runtime.create(options)]
    let last
    try {
      assert.equal(a.status().store, kind)
      assert.notEqual(a.status().slot, b.status().slot)
      const ids = [...a.nextIds(5000), ...b.nextIds(5000), a.nextId(), b.nextId()]
      assert.equal(assertUnique(assert, ids), 10002)
      last = a.nextId()
    } finally {
      await a.close()
      await b.close()
    }
    // Released: the next holder of that slot starts past its last timestamp.
    const slot = a.parse(last).slot
    const c = await Runtime.create({ ...options, preferredSlot: slot })
    try {
      assert.equal(c.status().slot, slot)
      assert.ok(c.nextId() > last)
    } finally {
      await c.close()
    }
  })

  test(`${kind}: other bits on a recorded namespace are NAMESPACE_MISMATCH`, { skip }, async () => {
    const ns = namespace()
    const a = await Runtime.create({ store: url, namespace: ns, bits: 4 })
    try {
      await assert.rejects(Runtime.create({ store: url, namespace: ns, bits: 6 }), { code: 'NAMESPACE_MISMATCH' })
    } finally {
      await a.close()
    }
  })

  test(`${kind}: processes sharing a namespace never share an id`, { skip }, async () => {
    const ns = namespace()
    const script = `
      const cosid = require('.')
      cosid.configure({ store: process.env.STORE, namespace: process.env.NS, bits: 5 })
      cosid.ready().then(() => {
        const ids = [...cosid.nextIds(2000)].map(String)
        console.log(JSON.stringify({ slot: cosid.status().slot, ids }))
      })
    `
    const runs = await Promise.all(
      [1, 2, 3, 4].map(() => runNode(['-e', script], { env: { STORE: url, NS: ns }, timeoutMs: 120_000 })),
    )
    const results = runs.map((r) => {
      assert.equal(r.code, 0, r.stderr)
      return JSON.parse(r.stdout)
    })
    // A process that exits releases its slot, which the next may take: each issued on its own slot meanwhile.
    const { parse } = require('..')
    for (const r of results) assert.ok(r.ids.every((id) => parse(id).slot === r.slot))
    assert.equal(assertUnique(assert, results.flatMap((r) => r.ids)), 8000)
  })
}
