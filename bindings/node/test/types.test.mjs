// index.d.ts and index.d.mts type-check, and describe the API: tsc --strict on a file that uses every export, as
// CommonJS and as an ES module, with @ts-expect-error lines for what the declarations must refuse.

import test from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'

const require = createRequire(import.meta.url)
let tsc
try {
  tsc = require.resolve('typescript/bin/tsc')
} catch {
  tsc = null
}

for (const [kind, fixture] of [
  ['CommonJS (index.d.ts)', 'usage.ts'],
  ['an ES module (index.d.mts)', 'usage.mts'],
]) {
  test(`a typed use of every export as ${kind} passes tsc --strict`, { skip: tsc ? false : 'typescript is not installed (npm ci installs it)' }, () => {
    const usage = fileURLToPath(new URL(`./fixtures/${fixture}`, import.meta.url))
    const r = spawnSync(
      process.execPath,
      [tsc, '--noEmit', '--strict', '--target', 'es2022', '--module', 'node16', '--moduleResolution', 'node16', usage],
      { encoding: 'utf8' },
    )
    assert.equal(r.status, 0, `${r.stdout}${r.stderr}`)
  })
}
