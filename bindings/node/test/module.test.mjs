// The package's entry points: require('cosid') and import from 'cosid' give the same functions, and index.d.ts
// declares exactly what the addon exports.

import test from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import cosidDefault, * as esm from 'cosid'

const require = createRequire(import.meta.url)
const cjs = require('cosid')

test('import and require resolve to one addon', () => {
  assert.equal(cosidDefault, cjs)
  const named = Object.keys(esm).filter((k) => k !== 'default').sort()
  assert.deepEqual(named, Object.keys(cjs).sort())
  for (const name of named) assert.equal(esm[name], cjs[name], name)
})

test('index.d.ts declares every export and nothing else', () => {
  const dts = readFileSync(new URL('../index.d.ts', import.meta.url), 'utf8')
  const declared = [...dts.matchAll(/^export declare (?:function|class|const) (\w+)/gm)].map((m) => m[1]).sort()
  assert.deepEqual(declared, Object.keys(cjs).sort())
})

test('the package.json exports map points at files that exist', () => {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))
  const entry = pkg.exports['.']
  for (const file of [entry.types, entry.import, entry.require, pkg.main, pkg.types]) {
    assert.doesNotThrow(() => readFileSync(new URL(`../${file}`, import.meta.url)), file)
  }
})
