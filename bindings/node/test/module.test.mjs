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
  // Every file a condition names, nested conditions included (import and require each have their own types).
  const leaves = (v) => (typeof v === 'string' ? [v] : Object.values(v).flatMap(leaves))
  const entry = pkg.exports['.']
  assert.deepEqual(Object.keys(entry), ['import', 'require'])
  for (const cond of Object.values(entry)) assert.equal(Object.keys(cond)[0], 'types', 'types comes first')
  for (const file of [...leaves(entry), pkg.main, pkg.types]) {
    assert.doesNotThrow(() => readFileSync(new URL(`../${file}`, import.meta.url)), file)
  }
})
