// An explicit Runtime: its own namespace and lease, its events, and an orderly close.
//
//   node runtime.mjs

import { Runtime } from 'cosid'

const rt = await Runtime.create({
  store: process.env.COSID_STORE ?? 'memory:',
  namespace: 'orders',
  ttl: '3s', // renewed every second
})

const off = rt.onEvent((event) => console.log('event', event.type, `slot ${event.slot}`))

const ids = rt.nextIds(5)
console.log('slot', rt.status().slot, 'ids', [...ids].map(String))
console.log('friendly', rt.toFriendly(ids[0]))

// Wait for one renewal, then release the slot. Events arrive on this thread's event loop; the keeper never
// waits for them, and a subscription never keeps the process alive: the timer does, while we wait.
const keepAlive = setTimeout(() => {}, 10_000)
await new Promise((resolve) => {
  const stop = rt.onEvent((event) => {
    if (event.type === 'RENEWED') {
      stop()
      resolve()
    }
  })
})
clearTimeout(keepAlive)
off()
const lastMs = await rt.close()
console.log('closed; last millisecond used', new Date(lastMs).toISOString())
