'use strict'
// The basics: ids from the process-wide runtime, in every form, and what an id says about itself.
//
//   COSID_STORE=sqlite:///tmp/cosid-example.db node quickstart.js
//
// With no COSID_STORE the runtime keeps its leases in an SQLite file in your state directory.

const cosid = require('cosid')

async function main() {
  // Acquire the slot off the event loop. Without this, the first nextId() acquires it (and blocks until then).
  await cosid.ready()

  const id = cosid.nextId() // bigint: ids go past 2^53, beyond what a number holds exactly
  console.log('id        ', id)
  console.log('as string ', cosid.nextIdString()) // the form for JSON
  console.log('batch     ', cosid.nextIds(3)) // BigUint64Array

  const { timestamp, slot, sequence } = cosid.parse(id)
  console.log('parsed    ', { timestamp: timestamp.toISOString(), slot, sequence })
  console.log('friendly  ', cosid.toFriendly(id))
  console.log('base-62   ', cosid.toBase62(id))
  console.log('round trip', cosid.fromBase62(cosid.toBase62(id)) === id)

  // JSON.stringify cannot write a bigint: send ids as strings.
  console.log('json      ', JSON.stringify({ orderId: cosid.nextIdString() }))

  const { namespace, store, slot: leased, state } = cosid.status()
  console.log('status    ', { namespace, store, slot: leased, state })

  // Errors carry a code.
  try {
    cosid.fromBase62('not-an-id')
  } catch (err) {
    console.log('error     ', err.code, '-', err.message)
  }
  // The slot is released when the process exits; shutdown() does it earlier.
}

main()
