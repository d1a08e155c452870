'use strict'
// Loads the native addon built by `npm install` (scripts/build.js) or `npm run build` (napi build --platform).
// The addon is one library per process: every worker_threads worker shares its process-wide runtime and lease.

const { existsSync } = require('node:fs')
const { join } = require('node:path')
const { isMainThread } = require('node:worker_threads')
const { platformName } = require('./platform.js')

function load() {
  const tried = []
  for (const file of [`cosid.${platformName()}.node`, 'cosid.node']) {
    const path = join(__dirname, file)
    if (existsSync(path)) return require(path)
    tried.push(path)
  }
  const err = new Error(
    `cosid: the native addon is not built (looked for ${tried.join(' and ')}). ` +
      `Run \`npm run build\` (or \`node scripts/build.js\`) in ${__dirname}; it needs the Rust toolchain (cargo).`,
  )
  err.code = 'ERR_COSID_NOT_BUILT'
  throw err
}

const native = load()

// Release every slot this process holds when it exits normally or through process.exit(). Only the main thread
// does it: a worker exiting must not close the runtime the other threads share. A process killed outright leaves
// its leases to expire after their ttl; no id can be repeated either way.
if (isMainThread) process.once('exit', () => native.closeAll())

// The addon's test-only probes (`__...`) are not part of the package's API.
module.exports = Object.fromEntries(Object.entries(native).filter(([name]) => !name.startsWith('__')))
