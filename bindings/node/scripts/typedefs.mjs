// Writes the index.d.ts that `napi build --dts index.d.ts` would write, from the type definitions napi-derive left
// in a folder while the addon was compiled with NAPI_TYPE_DEF_TMP_FOLDER set (scripts/dist.sh does, on its one
// release build). So the committed index.d.ts can be checked without building the addon a second time.
//
//   node scripts/typedefs.mjs TYPE_DEF_FOLDER OUT_FILE
import { readFileSync, writeFileSync } from 'node:fs'
import { generateTypeDef } from '@napi-rs/cli'

const [typeDefDir, out] = process.argv.slice(2)
if (!typeDefDir || !out) {
  console.error('usage: node scripts/typedefs.mjs TYPE_DEF_FOLDER OUT_FILE')
  process.exit(2)
}
// As `napi build --platform --no-js` calls it for this package: no loader is written, so none is declared, and
// the hand-written declarations of package.json's napi.dtsHeaderFile come first.
const { napi } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf-8'))
const { dts } = await generateTypeDef({
  typeDefDir,
  cwd: process.cwd(),
  declareBindingTarget: false,
  configDtsHeaderFile: napi.dtsHeaderFile,
})
writeFileSync(out, dts, 'utf-8')
