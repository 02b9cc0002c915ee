// Writes .br (quality 11) and .gz (level 9) copies beside every file under
// the folder given (not beside copies), for the server to send by
// Accept-Encoding (server/src/web/assets.rs). Node's own zlib: nothing to install.
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

function* files(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* files(path);
    else if (!name.endsWith('.br') && !name.endsWith('.gz')) yield path;
  }
}

for (const path of files(process.argv[2])) {
  const bytes = readFileSync(path);
  writeFileSync(`${path}.br`, brotliCompressSync(bytes, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: 11,
      [constants.BROTLI_PARAM_SIZE_HINT]: bytes.length,
    },
  }));
  writeFileSync(`${path}.gz`, gzipSync(bytes, { level: 9 }));
}
