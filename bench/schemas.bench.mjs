// What schema validation costs a plugin start and a controller, measured side by side:
//  - start-up: a fresh node process that imports the bundled validators and validates a document, against `node -e 0`
//    and against compiling the same schemas with ajv at run time (what the precompilation avoids);
//  - import time of the bundled validation module, measured inside the process;
//  - validations per second for the documents on the hot paths.
// Needs src/generated/validators.ts (`npm run build` or `npm run schemas:compile`).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'cpc-schemas-bench-'));
const runs = 21;

const providersFile = {
  providers: [
    {
      name: 'tenant-cert',
      execConfig: {
        apiVersion: 'client.authentication.k8s.io/v1',
        command: '/usr/local/bin/clusterprofile-tenant-cert',
        args: ['--cluster-id', 'hub'],
        provideClusterInfo: true,
      },
    },
    {
      name: 'oidc',
      execConfig: { apiVersion: 'client.authentication.k8s.io/v1beta1', command: 'clusterprofile-oidc' },
      profileSourcedCLIArgsPolicy: 'Append',
    },
  ],
};
const execInput = {
  apiVersion: 'client.authentication.k8s.io/v1',
  kind: 'ExecCredential',
  spec: {
    interactive: false,
    cluster: {
      server: 'https://10.0.0.3:6443',
      'certificate-authority-data': 'LS0tLS1CRUdJTi4uLg==',
      config: { clusterName: 'spoke-1' },
    },
  },
};
const execOutput = {
  apiVersion: 'client.authentication.k8s.io/v1',
  kind: 'ExecCredential',
  status: { token: 'x'.repeat(800), expirationTimestamp: '2026-11-22T10:00:00Z' },
};
const profile = {
  apiVersion: 'multicluster.x-k8s.io/v1alpha2',
  kind: 'ClusterProfile',
  metadata: { name: 'spoke-1', namespace: 'fleet' },
  spec: { clusterManager: { name: 'demo' } },
  status: {
    accessProviders: Array.from({ length: 4 }, (_, index) => ({
      name: `p${index}`,
      cluster: {
        server: 'https://10.0.0.3:6443',
        'certificate-authority-data': 'LS0tLS1CRUdJTi4uLg==',
        extensions: [{ name: 'client.authentication.k8s.io/exec', extension: { clusterName: 'spoke-1' } }],
      },
    })),
  },
};

try {
  // The validation module as a plugin bundle contains it.
  await build({
    entryPoints: { validators: `${root}src/schemas/index.ts` },
    outdir: work,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node22',
    logLevel: 'warning',
  });
  const bundle = join(work, 'validators.mjs');
  const bundleBytes = readFileSync(bundle).length;

  writeFileSync(
    join(work, 'precompiled.mjs'),
    `const t0 = performance.now();
const { validateDocument } = await import(${JSON.stringify(bundle)});
const t1 = performance.now();
const issues = validateDocument('execcredential-input.v1', ${JSON.stringify(execInput)});
const t2 = performance.now();
if (issues.length !== 0) throw new Error('invalid');
process.stdout.write(JSON.stringify({ importMs: t1 - t0, firstValidateMs: t2 - t1 }));
`,
  );
  // The alternative: ajv compiling the same schema at start-up.
  writeFileSync(
    join(work, 'runtime-ajv.mjs'),
    `import { createRequire } from 'node:module';
const require = createRequire(${JSON.stringify(join(root, 'package.json'))});
const t0 = performance.now();
const Ajv2020 = require('ajv/dist/2020.js').default;
const schema = JSON.parse(require('node:fs').readFileSync(${JSON.stringify(`${root}schemas/execcredential-input.v1.schema.json`)}, 'utf8'));
delete schema.$schema;
const ajv = new Ajv2020({ allErrors: true, strict: false });
const validate = ajv.compile(schema);
const t1 = performance.now();
if (!validate(${JSON.stringify(execInput)})) throw new Error('invalid');
process.stdout.write(JSON.stringify({ importMs: t1 - t0 }));
`,
  );

  const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
  function wall(args) {
    const times = [];
    const reports = [];
    for (let index = 0; index < runs; index++) {
      const start = process.hrtime.bigint();
      const result = spawnSync(process.execPath, args, { encoding: 'utf8' });
      times.push(Number(process.hrtime.bigint() - start) / 1e6);
      if (result.status !== 0) {
        throw new Error(result.stderr);
      }
      reports.push(result.stdout === '' ? {} : JSON.parse(result.stdout));
    }
    const field = (name) => median(reports.map((report) => report[name]));
    return { ms: median(times), field };
  }

  // Interleave nothing fancy: each variant runs `runs` times, medians compared.
  const baseline = wall(['-e', '0']);
  const precompiled = wall([join(work, 'precompiled.mjs')]);
  const runtime = wall([join(work, 'runtime-ajv.mjs')]);

  console.log(
    `bundled validators: ${(bundleBytes / 1024).toFixed(1)} KiB (all ${(readFileSync(`${root}src/generated/validators.ts`, 'utf8').match(/export const validate\d+ =/g) ?? []).length} schemas)`,
  );
  console.log(`process start, median of ${runs}:`);
  console.log(`  node -e 0                                  ${baseline.ms.toFixed(1)} ms`);
  console.log(
    `  + import precompiled validators + validate ${precompiled.ms.toFixed(1)} ms  (+${(precompiled.ms - baseline.ms).toFixed(1)} ms)`,
  );
  console.log(
    `  + ajv compile at run time + validate       ${runtime.ms.toFixed(1)} ms  (+${(runtime.ms - baseline.ms).toFixed(1)} ms)`,
  );
  console.log(
    `inside the process (medians): import of the validators ${precompiled.field('importMs').toFixed(2)} ms, first validation ${precompiled.field('firstValidateMs').toFixed(3)} ms; ajv import + compile of one schema ${runtime.field('importMs').toFixed(1)} ms`,
  );

  const { validateDocument } = await import(bundle);
  for (const [id, doc] of [
    ['providers-file', providersFile],
    ['execcredential-input.v1', execInput],
    ['execcredential-output.v1', execOutput],
    ['clusterprofile.v1alpha2', profile],
  ]) {
    const iterations = 200_000;
    for (let index = 0; index < 10_000; index++) validateDocument(id, doc);
    const start = process.hrtime.bigint();
    for (let index = 0; index < iterations; index++) {
      if (validateDocument(id, doc).length !== 0) throw new Error(`${id} invalid`);
    }
    const ns = Number(process.hrtime.bigint() - start) / iterations;
    console.log(`validateDocument('${id}'): ${(ns / 1000).toFixed(2)} µs/op`);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
