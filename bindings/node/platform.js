'use strict'
// The platform part of the addon's file name, as `napi build --platform` writes it: cosid.linux-x64-gnu.node,
// cosid.darwin-arm64.node, cosid.win32-x64-msvc.node, ...

function isMusl() {
  if (process.platform !== 'linux') return false
  // Cheap first: glibc's ldd is a script that names glibc, musl's names musl.
  try {
    return require('node:fs').readFileSync('/usr/bin/ldd', 'utf8').includes('musl')
  } catch {}
  // Then the process report (tens of milliseconds; network lookups left out).
  try {
    process.report.excludeNetwork = true
    const header = process.report.getReport().header
    return !header.glibcVersionRuntime
  } catch {
    return false
  }
}

function platformName() {
  const { platform, arch } = process
  if (platform === 'win32') return `win32-${arch}-msvc`
  if (platform === 'linux') {
    const libc = isMusl() ? 'musl' : 'gnu'
    return arch === 'arm' ? `linux-arm-${libc}eabihf` : `linux-${arch}-${libc}`
  }
  return `${platform}-${arch}`
}

module.exports = { platformName }
