'use strict'
// Diagnostics reach Node as events with a level, and no error or event shows a password planted in a store URL.
// A Redis server of the test's own (redis-server on a free port, `appendfsync everysec`) stands for a store whose
// settings break the safety claim; without redis-server on PATH those tests report themselves skipped.

const test = require('node:test')
const assert = require('node:assert/strict')
const { spawn, spawnSync } = require('node:child_process')
const net = require('node:net')
const util = require('node:util')
const { tempDir, sqliteStore } = require('./fixtures/helpers.js')
const { Runtime } = require('..')

const haveRedis = spawnSync('sh', ['-c', 'command -v redis-server']).status === 0

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
    server.on('error', reject)
  })
}

async function startRedis(t, extra) {
  const port = await freePort()
  const child = spawn(
    'redis-server',
    ['--bind', '127.0.0.1', '--port', String(port), '--dir', tempDir('cosid-redis-'), '--save', '', ...extra],
    { stdio: 'ignore' },
  )
  t.after(() => child.kill('SIGTERM'))
  const deadline = Date.now() + 10_000
  for (;;) {
    const up = await new Promise((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => {
        s.destroy()
        resolve(true)
      })
      s.on('error', () => resolve(false))
    })
    if (up) return port
    if (Date.now() > deadline) throw new Error('redis-server did not start')
    await new Promise((r) => setTimeout(r, 50))
  }
}

const tick = () => new Promise((r) => setTimeout(r, 50))

test('an unsafe store setting is a STORE_UNSAFE event at WARN, seen by the first callback', { skip: !haveRedis && 'no redis-server on PATH' }, async (t) => {
  const port = await startRedis(t, ['--appendonly', 'yes', '--appendfsync', 'everysec', '--requirepass', 's3cret-pw'])
  const rt = await Runtime.create({ store: `redis://default:s3cret-pw@127.0.0.1:${port}/0`, namespace: 'diag' })
  const seen = []
  rt.onEvent((e) => seen.push(e))
  rt.nextId()
  await rt.close()
  await tick()
  const found = seen.filter((e) => e.type === 'STORE_UNSAFE')
  assert.equal(found.length, 1, util.inspect(seen))
  const [e] = found
  assert.equal(e.level, 'WARN')
  assert.deepEqual([e.store, e.setting, e.value, e.expected], ['redis', 'appendfsync', 'everysec', 'always'])
  assert.match(e.message, /appendfsync = everysec/)
  assert.ok(!util.inspect(seen).includes('s3cret-pw'))
})

test('a safe store gives no warning; the lease steps are INFO', async () => {
  const rt = await Runtime.create({ store: sqliteStore(), namespace: 'diag' })
  const seen = []
  rt.onEvent((e) => seen.push(e))
  rt.nextId()
  await rt.close()
  await tick()
  assert.deepEqual(
    seen.map((e) => [e.type, e.level]),
    [
      ['ACQUIRED', 'INFO'],
      ['RELEASED', 'INFO'],
    ],
  )
})

test('no error shows a password planted in a store URL', async () => {
  const closed = await freePort()
  const cases = [
    [`redis://app:s3cret-ui@127.0.0.1:${closed}/0`, ['s3cret-ui']],
    [`postgres://app@127.0.0.1:${closed}/ids?password=s3cret-q`, ['s3cret-q']],
    [`etcd://root:s3cret-e@127.0.0.1:${closed}`, ['s3cret-e']],
    [`redis://app:pa@ss-s3cret@127.0.0.1:${closed}/0`, ['pa@ss', 's3cret']],
    [`redis://app:s3cr#et-h@127.0.0.1:${closed}/0`, ['s3cr', 'et-h']],
    [`rediss//app:s3cret-t@127.0.0.1:${closed}/0`, ['s3cret-t']],
  ]
  for (const [store, secrets] of cases) {
    // A bad value throws at once, an unreachable store rejects: both are caught here.
    const err = await (async () => Runtime.create({ store, namespace: 'diag-secret', acquireTimeout: '1s' }))().then(
      () => assert.fail(`${store} started`),
      (e) => e,
    )
    const shown = [String(err), err.message, err.stack ?? '', util.inspect(err)].join('\n')
    for (const s of secrets) assert.ok(!shown.includes(s), `${s} in ${shown}`)
  }
})
