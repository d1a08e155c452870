'use strict'
// Loads the native addon, the way @napi-rs/cli's generated loader does:
//   1. cosid.<platform>.node next to this file: a build from a checkout (`npm run build` or scripts/build.js);
//   2. the platform package, cosid-<platform> (cosid-linux-x64-gnu, ...): the prebuilt addon npm installs as an
//      optional dependency of this package, chosen by its os/cpu/libc fields. There is no install script.
// A platform without a prebuilt package needs a build from a checkout of the repository (docs/install.md).
// The addon is one library per process: every worker_threads worker shares its process-wide runtime and lease.

const { existsSync } = require('node:fs')
const { join } = require('node:path')
const { isMainThread } = require('node:worker_threads')
const { platformName } = require('./platform.js')

function load() {
  const platform = platformName()
  const local = join(__dirname, `cosid.${platform}.node`)
  if (existsSync(local)) return require(local)
  const pkg = `cosid-${platform}`
  try {
    return require(pkg)
  } catch (cause) {
    if (cause && cause.code !== 'MODULE_NOT_FOUND') throw cause
    const err = new Error(
      `cosid: no native addon for ${platform}: the optional dependency ${pkg} is not installed (npm skips it on ` +
        `another platform, and with --omit=optional or --no-optional), and ${local} does not exist. Reinstall ` +
        `without omitting optional dependencies, or on a platform with no prebuilt package build the addon from ` +
        `a checkout of the repository (bindings/node: \`npm ci && npm run build\`; it needs Rust and cargo).`,
      { cause },
    )
    err.code = 'ERR_COSID_NOT_BUILT'
    throw err
  }
}

const native = load()

// Release every slot this process holds when it exits normally or through process.exit(). Only the main thread
// does it: a worker exiting must not close the runtime the other threads share. A process killed outright leaves
// its leases to expire after their ttl; no id can be repeated either way.
if (isMainThread) process.once('exit', () => native.closeAll())

// Every `code` of an error cosid throws: the core's names (`ErrorCode` in index.d.ts).
const codes = new Set(native.__errorCodes())

/**
 * The class of every error cosid throws, to narrow on: `err instanceof CosidError`, then `err.code` (an
 * `ErrorCode`). The addon throws plain `Error` objects with a `code` (the fast path stays one native call), so
 * `instanceof` recognizes them by that code: an `Error` whose `code` is one of cosid's names.
 */
class CosidError extends Error {
  constructor(code, message, options) {
    super(message, options)
    this.code = code
  }

  static [Symbol.hasInstance](value) {
    return (
      Function.prototype[Symbol.hasInstance].call(this, value) ||
      (value instanceof Error && typeof value.code === 'string' && codes.has(value.code))
    )
  }
}
Object.defineProperty(CosidError.prototype, 'name', { value: 'CosidError', configurable: true, writable: true })

// The addon's test-only probes (`__...`) are not part of the package's API.
module.exports = Object.fromEntries(Object.entries(native).filter(([name]) => !name.startsWith('__')))
module.exports.CosidError = CosidError
