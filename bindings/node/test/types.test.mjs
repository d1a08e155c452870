// index.d.ts type-checks, and describes the API: tsc --strict on a file that uses every export, with
// @ts-expect-error lines for calls the declarations must refuse.

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

test('index.d.ts and a typed use of every export pass tsc --strict', { skip: tsc ? false : 'typescript is not installed (npm ci installs it)' }, () => {
  const usage = fileURLToPath(new URL('./fixtures/usage.ts', import.meta.url))
  const r = spawnSync(
    process.execPath,
    [tsc, '--noEmit', '--strict', '--target', 'es2022', '--module', 'node16', '--moduleResolution', 'node16', usage],
    { encoding: 'utf8' },
  )
  assert.equal(r.status, 0, `${r.stdout}${r.stderr}`)
})
