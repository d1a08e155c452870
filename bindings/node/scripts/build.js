#!/usr/bin/env node
'use strict'
// Builds the native addon with cargo and copies it to where index.js looks for it (cosid.<platform>.node).
// The stores of the released addon by default (SQLite, memory, `http://`, Redis, PostgreSQL: docs/install.md).
// COSID_NODE_FEATURES=stores builds every store (MySQL, etcd, ZooKeeper, MongoDB too);
// a list (any of redis, postgres, mysql, etcd, zookeeper, mongodb; empty for none) builds exactly those, SQLite,
// memory and `http://` always included.
//
// A developer's build from a checkout (the crate is a member of the repository's Cargo workspace, so it needs the
// whole checkout, not the npm package): the published package has no install script and loads the prebuilt addon
// of its platform package (index.js). It needs no npm dependency; `npm run build` does the same through
// `napi build`, and also regenerates index.d.ts.
//
//   node scripts/build.js            release build
//   node scripts/build.js --debug    debug build (faster to compile, slower ids)

const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { platformName } = require('../platform.js')

const root = path.resolve(__dirname, '..')
const release = !process.argv.includes('--debug')

function fail(message) {
  console.error(`cosid: ${message}`)
  process.exit(1)
}

function findCargo() {
  const candidates = [process.env.CARGO, 'cargo', path.join(os.homedir(), '.cargo', 'bin', 'cargo')]
  for (const candidate of candidates.filter(Boolean)) {
    const probe = spawnSync(candidate, ['--version'], { stdio: 'ignore' })
    if (!probe.error && probe.status === 0) return candidate
  }
  return fail(
    'building the native addon needs the Rust toolchain (cargo, Rust 1.89 or newer), and none was found on ' +
      'PATH or in ~/.cargo/bin. Install it (https://rustup.rs), then run `node scripts/build.js` again.',
  )
}

const cargo = findCargo()
const args = [
  'build',
  '--lib',
  '--manifest-path',
  path.join(root, 'Cargo.toml'),
  '--message-format=json-render-diagnostics',
]
if (release) args.push('--release')
const STORES = ['redis', 'postgres', 'mysql', 'etcd', 'zookeeper', 'mongodb']
let features = ['redis', 'postgres']
if (process.env.COSID_NODE_FEATURES !== undefined) {
  features = process.env.COSID_NODE_FEATURES.split(/[\s,]+/).filter(Boolean)
  if (features.length === 1 && features[0] === 'stores') features = STORES
  const unknown = features.filter((f) => !STORES.includes(f))
  if (unknown.length) {
    const expected = `\`stores\` or a list of ${STORES.join(', ')} (or empty)`
    fail(`COSID_NODE_FEATURES names ${unknown.join(', ')}: expected ${expected}`)
  }
  args.push('--no-default-features')
  if (features.length) args.push('--features', features.join(','))
}
console.error(`cosid: ${cargo} ${args.join(' ')}`)
const build = spawnSync(cargo, args, {
  cwd: root,
  stdio: ['ignore', 'pipe', 'inherit'],
  maxBuffer: 256 * 1024 * 1024,
  encoding: 'utf8',
})
if (build.error) fail(`could not run ${cargo}: ${build.error.message}`)
if (build.status !== 0) fail(`cargo build failed (exit status ${build.status}); its errors are above`)

let library
for (const line of build.stdout.split('\n')) {
  if (!line.startsWith('{')) continue
  const message = JSON.parse(line)
  if (
    message.reason === 'compiler-artifact' &&
    message.target &&
    message.target.name === 'cosid_node' &&
    message.target.kind.includes('cdylib')
  ) {
    library = message.filenames.find((f) => /\.(so|dylib|dll)$/.test(f))
  }
}
if (!library) fail('cargo finished but reported no cdylib for cosid_node')

// Copy, then rename over the old file: a process that has the old addon loaded keeps its mapping.
const dest = path.join(root, `cosid.${platformName()}.node`)
const tmp = `${dest}.${process.pid}.tmp`
fs.copyFileSync(library, tmp)
fs.renameSync(tmp, dest)
console.error(`cosid: built ${path.relative(process.cwd(), dest) || dest}`)
