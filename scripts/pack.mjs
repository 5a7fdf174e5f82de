// `npm pack` / `npm publish` hooks (package.json `prepack` and `postpack`).
//
//   prepack:  build dist/ (a clone that was never built packs a working package), then write package.json without
//             `scripts` for the tarball. None of them can run outside the repository (they need devDependencies and
//             files the tarball does not ship), and npm lists a `prepare` it finds to every consumer of a tarball as
//             an install script. The original is kept in .package.json.prepack.
//   postpack: put the original package.json back.
//
// A git install (`npm install git+...`) runs neither: npm installs the devDependencies in its clone and runs
// `prepare`, which is the same build.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
process.chdir(root);
const SAVED = '.package.json.prepack';

function restore() {
  if (existsSync(SAVED)) renameSync(SAVED, 'package.json');
}

const step = process.argv[2];
if (step === 'prepack') {
  restore(); // an interrupted earlier pack
  const build = spawnSync(process.execPath, ['scripts/build.mjs'], { stdio: 'inherit' });
  if (build.status !== 0) process.exit(build.status ?? 1);
  const text = readFileSync('package.json', 'utf8');
  const { scripts, ...published } = JSON.parse(text);
  writeFileSync(SAVED, text);
  writeFileSync('package.json', `${JSON.stringify(published, null, 2)}\n`);
} else if (step === 'postpack') {
  restore();
} else {
  console.error('usage: node scripts/pack.mjs prepack|postpack');
  process.exit(2);
}
