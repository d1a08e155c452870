// worker_threads share one runtime and one lease: four workers and the main thread, one slot, no duplicate.
//
//   node workers.mjs

import { Worker, isMainThread, parentPort } from 'node:worker_threads'
import * as cosid from 'cosid'

if (isMainThread) {
  cosid.configure({ store: process.env.COSID_STORE ?? 'memory:', namespace: 'workers-example' })
  await cosid.ready()
  const batches = await Promise.all(
    [1, 2, 3, 4].map(
      () =>
        new Promise((resolve, reject) => {
          const worker = new Worker(new URL(import.meta.url))
          worker.once('message', resolve)
          worker.once('error', reject)
        }),
    ),
  )
  const all = new Set([...cosid.nextIds(10_000), ...batches.flatMap((b) => [...b.ids])])
  console.log('slots', [cosid.status().slot, ...batches.map((b) => b.slot)].join(' '))
  console.log('ids', all.size, 'unique of', 10_000 * 5)
} else {
  const ids = cosid.nextIds(10_000)
  parentPort.postMessage({ slot: cosid.status().slot, ids }, [ids.buffer])
}
