// The ES module entry: the same addon as `require('cosid')`, with named exports.
import cosid from './index.js'

export const {
  CosidError,
  Runtime,
  closeAll,
  configure,
  fromBase62,
  fromFriendly,
  layout,
  nextId,
  nextIdNumber,
  nextIdString,
  nextIdStrings,
  nextIds,
  onEvent,
  parse,
  ready,
  shutdown,
  shutdownSync,
  status,
  stores,
  toBase62,
  toFriendly,
} = cosid

export default cosid
