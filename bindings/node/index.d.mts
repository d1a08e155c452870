// Types of the ES module entry (index.mjs): the same API as index.d.ts, as named exports and a default export.
import cosid = require('./index.js')
export * from './index.js'
export default cosid
