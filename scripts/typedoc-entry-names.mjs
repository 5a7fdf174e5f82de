// A TypeDoc plugin (typedoc.json): names each entry point's module the way users import it, from package.json's
// `exports` (`.` → clusterprofile-credentials, `./core` → clusterprofile-credentials/core, ...), instead of TypeDoc's
// name from the source path (library, library/core, plugin). An entry point that is no package export keeps its name.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Converter, ReflectionKind } from 'typedoc';

const root = fileURLToPath(new URL('..', import.meta.url));

/** Each export's import specifier by its source file: `exports[x].types` (./dist/a/b.d.ts) read as ./src/a/b.ts. */
export function importNames() {
  const pkg = JSON.parse(readFileSync(resolve(root, 'package.json'), 'utf8'));
  const names = new Map();
  for (const [subpath, target] of Object.entries(pkg.exports)) {
    if (typeof target !== 'object' || target.types === undefined) continue; // ./package.json
    const source = target.types.replace(/^\.\/dist\//, './src/').replace(/\.d\.ts$/, '.ts');
    names.set(resolve(root, source), subpath === '.' ? pkg.name : `${pkg.name}/${subpath.slice(2)}`);
  }
  return names;
}

/** @param {import('typedoc').Application} app */
export function load(app) {
  const names = importNames();
  app.converter.on(Converter.EVENT_CREATE_DECLARATION, (context, reflection) => {
    if (!reflection.kindOf(ReflectionKind.Module)) return;
    const file = context.getSymbolFromReflection(reflection)?.declarations?.[0]?.getSourceFile().fileName;
    const name = file === undefined ? undefined : names.get(resolve(file));
    if (name !== undefined) reflection.name = name;
  });
}
