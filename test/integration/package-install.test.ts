/**
 * The package as users get it, outside this repository:
 * - `npm pack` in a copy of this working tree that was never built (prepack builds it), installed with client-node
 *   into a fresh consumer project;
 * - `npm install git+file://` of a commit of the same tree (npm's clone installs the devDependencies and runs prepare).
 * Both: the three entry points type-check from an ES module (.mts) and a CommonJS (.cts) consumer (module nodenext,
 * skipLibCheck false) and run from both, and every binary answers --version and --help. Slow (npm, tsc, two builds).
 * The packed one also runs the README examples' imports, and a plugin missing from a controller's PATH is answered
 * with the node_modules/.bin it is in.
 */
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  version: string;
  bin: Record<string, string>;
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
};
const BINARIES = Object.keys(manifest.bin);
const work = mkdtempSync(join(tmpdir(), 'cpc-package-'));
// The user's environment (npm's registry, proxy and CA settings), without what `npm run` adds for its own child
// processes; npm and the bins' `#!/usr/bin/env node` use the first node on PATH: this test's (the project's Node 24).
const env = {
  ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name))),
  PATH: `${dirname(process.execPath)}:${process.env['PATH'] ?? ''}`,
};

afterAll(() => rmSync(work, { recursive: true, force: true }));

function sh(command: string, args: readonly string[], cwd: string): SpawnSyncReturns<string> {
  return spawnSync(command, args, { cwd, env, encoding: 'utf8', timeout: 240_000 });
}

function ok(result: SpawnSyncReturns<string>): string {
  expect(result.error).toBeUndefined();
  expect(result.status, `${result.stdout}\n${result.stderr}`).toBe(0);
  return result.stdout;
}

/** This working tree as a clone would have it (tracked and new files, nothing git ignores: no dist/, no node_modules/). */
function copyTree(to: string): void {
  const files = ok(sh('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], root))
    .split('\0')
    .filter(Boolean);
  for (const file of files) {
    if (!existsSync(join(root, file))) continue; // deleted, not yet committed
    mkdirSync(dirname(join(to, file)), { recursive: true });
    cpSync(join(root, file), join(to, file));
  }
}

const CONSUMER_SOURCE = `
import { buildConfigFromClusterProfile, type ClusterProfile } from 'clusterprofile-credentials';
import { parseAccessConfig, renderKubeconfig, resolveClusterAccess, isCredentialsError } from 'clusterprofile-credentials/core';
import { COMMON_FLAGS, runPlugin } from 'clusterprofile-credentials/plugin';

const providers = { providers: [{ name: 'oidc', execConfig: { apiVersion: 'client.authentication.k8s.io/v1', command: 'clusterprofile-oidc' } }] };
const accessConfig = parseAccessConfig(JSON.stringify(providers), 'providers.json');
const profile: ClusterProfile = {
  apiVersion: 'multicluster.x-k8s.io/v1alpha1',
  kind: 'ClusterProfile',
  metadata: { name: 'member-1', namespace: 'fleet' },
  spec: { displayName: 'member-1', clusterManager: { name: 'test' } },
  status: { accessProviders: [{ name: 'oidc', cluster: { server: 'https://member-1.example:6443' } }] },
};
const kubeConfig = buildConfigFromClusterProfile(profile, accessConfig);
let code: string | undefined;
try {
  parseAccessConfig('{', 'bad.json');
} catch (error) {
  code = isCredentialsError(error) ? error.code : 'not a CredentialsError';
}
console.log(JSON.stringify({
  server: kubeConfig.getCurrentCluster()?.server,
  command: resolveClusterAccess(profile, accessConfig).exec.command,
  kubeconfig: renderKubeconfig(resolveClusterAccess(profile, accessConfig)).includes('"clusterprofile-oidc"'),
  runPlugin: typeof runPlugin,
  version: 'version' in COMMON_FLAGS,
  code,
}));
`;

const EXPECTED_OUTPUT = {
  server: 'https://member-1.example:6443',
  command: 'clusterprofile-oidc',
  kubeconfig: true,
  runPlugin: 'function',
  version: true,
  code: 'ERR_ACCESS_CONFIG_PARSE',
};

/** A consumer project with the package installed by `npm install <spec>`; returns the npm output. */
function consumer(dir: string, spec: string): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', private: true }));
  // @types/ws: client-node's own .d.ts import 'ws', whose types it does not depend on (a consumer checking libraries
  // needs them whatever it imports from us).
  const result = sh(
    'npm',
    // --prefer-offline: from npm's cache when it has the versions (no registry round trip per package).
    ['install', spec, '@kubernetes/client-node@2.0.x', '@types/ws', '--prefer-offline', '--no-audit', '--no-fund'],
    dir,
  );
  ok(result);
  return `${result.stdout}${result.stderr}`;
}

function expectBinariesWork(dir: string): void {
  for (const binary of BINARIES) {
    const bin = join(dir, 'node_modules', '.bin', binary);
    expect(ok(sh(bin, ['--version'], dir)), binary).toBe(`${manifest.version}\n`);
    expect(ok(sh(bin, ['--help'], dir)), binary).toMatch(new RegExp(`${binary} `));
  }
}

function expectEntryPointsRun(dir: string): void {
  writeFileSync(
    join(dir, 'esm.mjs'),
    `import('clusterprofile-credentials').then(async (root) => {
    const core = await import('clusterprofile-credentials/core');
    const plugin = await import('clusterprofile-credentials/plugin');
    console.log([typeof root.buildConfigFromClusterProfile, typeof core.resolveClusterAccess, typeof plugin.runPlugin].join());
  });`,
  );
  expect(ok(sh(process.execPath, ['esm.mjs'], dir))).toBe('function,function,function\n');
}

describe('npm pack of a never-built clone, installed into a fresh project', () => {
  const source = join(work, 'source');
  const project = join(work, 'consumer');
  let tarball: string;
  let unpacked: string;
  let installOutput: string;

  beforeAll(() => {
    copyTree(source);
    expect(existsSync(join(source, 'dist'))).toBe(false);
    symlinkSync(join(root, 'node_modules'), join(source, 'node_modules'));
    const packed = ok(sh('npm', ['pack', '--pack-destination', work], source))
      .trim()
      .split('\n')
      .at(-1)!;
    tarball = join(work, packed);
    unpacked = join(work, 'unpacked');
    mkdirSync(unpacked);
    ok(sh('tar', ['-xzf', tarball, '-C', unpacked], work));
    installOutput = consumer(project, tarball);
  }, 300_000);

  it('ships the build, the bins, the schemas and CHANGELOG.md, no scripts, and says where the project lives', () => {
    const pkg = join(unpacked, 'package');
    for (const file of [
      'dist/library/index.js',
      'dist/library/index.d.ts',
      'dist/library/core.js',
      'dist/plugin/index.js',
      'CHANGELOG.md',
      'schemas',
    ]) {
      expect(existsSync(join(pkg, file)), file).toBe(true);
    }
    for (const binary of BINARIES) {
      expect(existsSync(join(pkg, 'bin', `${binary}.mjs`)), binary).toBe(true);
      expect(existsSync(join(pkg, 'dist', 'bin', `${binary}.mjs`)), binary).toBe(true);
    }
    const published = JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8')) as Record<string, unknown>;
    expect(published['scripts']).toBeUndefined();
    const home = 'https://github.com/clusterprofile-credentials/clusterprofile-credentials';
    expect(published['repository']).toEqual({ type: 'git', url: `git+${home}.git` });
    expect(published['homepage']).toBe(`${home}#readme`);
    expect(published['bugs']).toEqual({ url: `${home}/issues` });
    // The source tree's package.json is back as it was (postpack).
    expect(readFileSync(join(source, 'package.json'), 'utf8')).toBe(readFileSync(join(root, 'package.json'), 'utf8'));
  });

  it('ships no source map that points at a source it does not ship', () => {
    const files = readdirSync(join(unpacked, 'package'), { recursive: true, encoding: 'utf8' });
    const maps = files.filter((file) => file.endsWith('.map'));
    expect(maps.length).toBeGreaterThan(0);
    const unresolved = maps.flatMap((file) => {
      const map = JSON.parse(readFileSync(join(unpacked, 'package', file), 'utf8')) as {
        sources: string[];
        sourcesContent?: (string | null)[];
      };
      return map.sources
        .filter(
          (source, index) =>
            typeof map.sourcesContent?.[index] !== 'string' &&
            !existsSync(join(unpacked, 'package', dirname(file), source)),
        )
        .map((source) => `${file}: ${source}`);
    });
    expect(unresolved).toEqual([]);
  });

  it('runs only its own code, Node built-ins and declared dependencies, and bundles none of those into the binaries', async () => {
    const pkg = join(unpacked, 'package');
    // The whole graph (static and dynamic imports) of the three entry points and of the bins, as esbuild resolves it.
    const entryPoints = [
      'dist/library/index.js',
      'dist/library/core.js',
      'dist/plugin/index.js',
      ...BINARIES.map((binary) => `bin/${binary}.mjs`),
    ];
    const { metafile } = await build({
      entryPoints: entryPoints.map((file) => join(pkg, file)),
      bundle: true,
      splitting: true,
      format: 'esm',
      platform: 'node',
      packages: 'external',
      write: false,
      outdir: join(work, 'graph'),
      metafile: true,
      logLevel: 'silent',
    });
    const imported = new Set(
      Object.values(metafile.inputs).flatMap((input) =>
        // `<runtime>` is esbuild's own helper module (for require() in the CJS hit files), not a package.
        input.imports
          .filter((entry) => entry.external && !entry.path.startsWith('node:') && entry.path !== '<runtime>')
          .map((entry) => entry.path),
      ),
    );
    const declared = new Set([...Object.keys(manifest.dependencies), ...Object.keys(manifest.peerDependencies)]);
    const packageOf = (specifier: string) =>
      specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0]!;
    expect(
      [...imported].filter((specifier) => !builtinModules.includes(specifier) && !declared.has(packageOf(specifier))),
    ).toEqual([]);
    // Each runtime dependency is used (@types/* are for the .d.ts files).
    const used = new Set([...imported].map(packageOf));
    expect([...declared].filter((name) => !name.startsWith('@types/') && !used.has(name))).toEqual([]);

    // esbuild names every module it bundles in a comment, `// [path/]node_modules/<package>/...`: none is a dependency.
    const bins = readdirSync(join(pkg, 'dist', 'bin'), { recursive: true, encoding: 'utf8' }).filter((file) =>
      file.endsWith('.mjs'),
    );
    const bundled = new Set(
      bins.flatMap((file) =>
        [
          ...readFileSync(join(pkg, 'dist', 'bin', file), 'utf8').matchAll(
            /^\/\/ \S*node_modules\/((?:@[^/]+\/)?[^/]+)\//gm,
          ),
        ].map((match) => match[1]!),
      ),
    );
    expect([...bundled].filter((library) => declared.has(library))).toEqual([]);
    expect(bundled).toContain('yargs'); // what the bins do bundle: devDependencies
    // Code only the bundles use (the CLI) is not shipped a second time as loose files; the providers and kube are
    // (the library's fleet manager obtains credentials in process through them).
    expect(existsSync(join(pkg, 'dist', 'cli')), 'dist/cli').toBe(false);
    for (const dir of ['providers', 'kube']) expect(existsSync(join(pkg, 'dist', dir)), `dist/${dir}`).toBe(true);
  });

  it('installs without install scripts or warnings about them', () => {
    expect(installOutput).not.toMatch(/install-scripts|prepare/);
  });

  it('type-checks an ES module and a CommonJS consumer with skipLibCheck false, and both run', () => {
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2023',
          strict: true,
          skipLibCheck: false,
          outDir: 'out',
          types: ['node'],
        },
        include: ['esm.mts', 'cjs.cts'],
      }),
    );
    writeFileSync(join(project, 'esm.mts'), CONSUMER_SOURCE);
    writeFileSync(join(project, 'cjs.cts'), CONSUMER_SOURCE);
    expect(ok(sh(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', '.'], project))).toBe(
      '',
    );
    expect(readFileSync(join(project, 'out', 'cjs.cjs'), 'utf8')).toContain('require("clusterprofile-credentials")');
    for (const script of ['out/esm.mjs', 'out/cjs.cjs']) {
      expect(JSON.parse(ok(sh(process.execPath, [script], project))), script).toEqual(EXPECTED_OUTPUT);
    }
  });

  it('runs every binary (--version, --help) from node_modules/.bin', () => {
    expectBinariesWork(project);
  });

  it("runs the README's two examples' imports from the installed package", () => {
    // The examples as a whole type-check in test/unit/docs.test.ts and run against a hub in test/e2e/playground.test.ts.
    const examples = [...readFileSync(join(root, 'README.md'), 'utf8').matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map(
      (match) => match[1]!,
    );
    expect(examples).toHaveLength(2);
    for (const [index, body] of examples.entries()) {
      const imports = body.split('\n').filter((line) => line.startsWith('import '));
      expect(imports.join('\n')).toContain("from 'clusterprofile-credentials'");
      const file = `readme-imports-${index}.mjs`;
      // Type-only specifiers (`type ClusterProfile`) are not there at run time.
      writeFileSync(
        join(project, file),
        `${imports.map((line) => line.replace(/,?\s*type \w+/g, '')).join('\n')}\nconsole.log('ok');\n`,
      );
      expect(ok(sh(process.execPath, [file], project)), file).toBe('ok\n');
    }
  });

  it('a plugin of the package missing from PATH: ERR_EXEC_NOT_FOUND names node_modules/.bin and the fixes', () => {
    writeFileSync(
      join(project, 'missing-plugin.mjs'),
      `import { CoreV1Api } from '@kubernetes/client-node';
import { buildConfigFromClusterProfile, formatError, parseAccessConfig } from 'clusterprofile-credentials';
const providers = { providers: [{ name: 'oidc', execConfig: { apiVersion: 'client.authentication.k8s.io/v1', command: 'clusterprofile-oidc' } }] };
const profile = {
  apiVersion: 'multicluster.x-k8s.io/v1alpha1', kind: 'ClusterProfile', metadata: { name: 'member-1', namespace: 'fleet' },
  spec: { displayName: 'member-1', clusterManager: { name: 'test' } },
  status: { accessProviders: [{ name: 'oidc', cluster: { server: 'https://127.0.0.1:9' } }] },
};
const member = buildConfigFromClusterProfile(profile, parseAccessConfig(JSON.stringify(providers), 'providers.json'));
await member.makeApiClient(CoreV1Api).listNamespace().catch((error) => console.log(formatError(error)));
`,
    );
    // A controller's PATH: without node_modules/.bin.
    const run = spawnSync(process.execPath, ['missing-plugin.mjs'], {
      cwd: project,
      env: { ...env, PATH: '/usr/bin:/bin' },
      encoding: 'utf8',
    });
    const bin = join(project, 'node_modules', '.bin');
    expect(run.stdout).toBe(
      [
        'ERR_EXEC_NOT_FOUND: exec: executable clusterprofile-oidc not found (at clusterprofile-oidc)',
        `hint: clusterprofile-oidc comes with the clusterprofile-credentials package, installed as ${join(bin, 'clusterprofile-oidc')}, which is not on PATH; either add ${bin} to the PATH of the process that runs it, or set "command" in the providers file to the absolute path ${join(bin, 'clusterprofile-oidc')}`,
        '',
      ].join('\n'),
    );
  });
});

describe('npm install git+file:// of a commit (npm builds it in its clone)', () => {
  const repository = join(work, 'repository');
  const project = join(work, 'git-consumer');

  beforeAll(() => {
    copyTree(repository);
    const git = (...args: string[]) =>
      ok(sh('git', ['-c', 'user.name=test', '-c', 'user.email=test@example.com', ...args], repository));
    git('init', '-q');
    git('add', '-A');
    git('commit', '-q', '-m', 'snapshot');
    consumer(project, `git+file://${repository}`);
  }, 300_000);

  it('imports the three entry points and runs every binary', () => {
    expectEntryPointsRun(project);
    expectBinariesWork(project);
  });
});
