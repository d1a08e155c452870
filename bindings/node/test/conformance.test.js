'use strict'
// The Node driver of the cross-language conformance table, tests/conformance/cases.txt at the root of the
// repository (its header describes the format). The same cases run in Rust, the CLI, C and Python: a case added to
// the table runs here too. Each case runs on a fresh Runtime (its settings given as the table's text, by their
// camelCase option names) and a fresh temporary directory. Node cannot fork(): a case stops before a
// `fork_next_id` step and reports it as skipped.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { tempDir } = require('./fixtures/helpers.js')
const { Runtime } = require('..')

const TABLE = path.resolve(__dirname, '..', '..', '..', 'tests', 'conformance', 'cases.txt')
const ACTIONS = new Set(['start', 'next_id', 'slot', 'shutdown', 'fork_next_id'])

function readCases() {
  const cases = []
  fs.readFileSync(TABLE, 'utf8')
    .split('\n')
    .forEach((line, n) => {
      if (!line || line.startsWith('#')) return
      const space = line.indexOf(' ')
      const [word, rest] = space < 0 ? [line, ''] : [line.slice(0, space), line.slice(space + 1)]
      if (word === 'case') cases.push({ name: rest, set: [], steps: [], hidden: [] })
      else if (word === 'hidden') cases[cases.length - 1].hidden.push(rest)
      else if (word === 'set') {
        const i = rest.indexOf(' ')
        cases[cases.length - 1].set.push([rest.slice(0, i), rest.slice(i + 1)])
      } else if (ACTIONS.has(word)) cases[cases.length - 1].steps.push([word, rest])
      else throw new Error(`${TABLE}:${n + 1}: unknown directive ${JSON.stringify(word)}`)
    })
  return cases
}

const camel = (key) => key.replace(/_([a-z])/g, (_, c) => c.toUpperCase())

// Every form of every error of the current case, as Node shows it, for `hidden`.
const shown = []

async function outcome(call) {
  try {
    await call()
    return 'OK'
  } catch (err) {
    if (typeof err.code !== 'string' || !/^[A-Z_]+$/.test(err.code)) throw err
    shown.push(String(err), err.message, err.stack ?? '', require('node:util').inspect(err))
    return err.code
  }
}

const cases = fs.existsSync(TABLE) ? readCases() : []

test('the table is there', () => {
  assert.ok(fs.existsSync(TABLE), `${TABLE} is missing`)
  assert.ok(cases.length >= 20, `${cases.length} cases`)
})

for (const c of cases) {
  test(`conformance: ${c.name}`, async (t) => {
    const dir = tempDir('cosid-conformance-')
    const options = Object.fromEntries(c.set.map(([k, v]) => [camel(k), v.replaceAll('{dir}', dir)]))
    let rt = null
    const failures = []
    shown.length = 0
    try {
      for (const [action, expect] of c.steps) {
        if (action === 'fork_next_id') {
          t.diagnostic(`skipped: ${action} (Node cannot fork)`)
          break
        }
        let got
        if (action === 'start') got = await outcome(async () => (rt = await Runtime.create(options)))
        else if (action === 'next_id') got = await outcome(() => rt.nextId())
        else if (action === 'shutdown') got = await outcome(() => rt.close())
        else {
          try {
            got = String(rt.status().slot)
          } catch (err) {
            got = err.code
          }
        }
        if (got !== expect) failures.push(`${action}: expected ${expect}, got ${got}`)
      }
    } finally {
      if (rt) await rt.close()
    }
    for (const text of c.hidden) {
      for (const s of shown) if (s.includes(text)) failures.push(`shows ${JSON.stringify(text)}: ${s}`)
    }
    assert.deepEqual(failures, [])
  })
}
