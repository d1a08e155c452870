'use strict'
// An HTTP service that hands out ids as JSON strings. It asks itself for a few, prints them and stops.
//
//   node http-server.js           (add --serve to keep it running on port 8080)

const http = require('node:http')
const cosid = require('cosid')

const server = http.createServer((req, res) => {
  const n = Math.min(Number(new URL(req.url, 'http://x').searchParams.get('n') || 1), 1000)
  try {
    const ids = Array.from(cosid.nextIds(n), String)
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ ids }))
  } catch (err) {
    // err.code says what failed: SLOT_LOST, WINDOW_CLOSED, ... (503: try again shortly).
    res.writeHead(503, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ error: err.code, message: err.message }))
  }
})

async function main() {
  await cosid.ready()
  const serve = process.argv.includes('--serve')
  server.listen(serve ? 8080 : 0, '127.0.0.1', async () => {
    const { port } = server.address()
    console.log(`listening on http://127.0.0.1:${port}/?n=3`)
    if (serve) return
    const body = await (await fetch(`http://127.0.0.1:${port}/?n=3`)).json()
    console.log('response', JSON.stringify(body))
    console.log('slots', body.ids.map((id) => cosid.parse(id).slot).join(' '))
    server.close()
  })
}

main()
