// Issuer handshakes per second and latency, the state backends side by side in one run: the data dir (one process,
// embedded CA) and the Kubernetes state (--state kubernetes: ConfigMaps and Secrets of a real kube-apiserver + etcd
// started by this run, test/helpers/controlplane.ts) with one and with two replicas.
// Targets on 2 cores: data dir >= 600/s at concurrency 4 (and the older >= 500/s with p99 < 20 ms); Kubernetes state
// >= 200/s with p99 <= 50 ms.
//
// Every issuer is a real `clusterprofile issuer serve` process (built bin) on 127.0.0.1 over TLS; this process is the
// load: CONCURRENCY clients over keep-alive HTTPS connections (undici, trusting the serving CA), each doing complete
// handshakes back to back — POST /v1/nonces (signed by the consumer key), sign the context-v1 message, POST
// /v1/tenants. With two replicas, client i talks to replica i mod 2. A consumer's CSR is built once and reused. The
// Kubernetes issuers run with a token of the ServiceAccount of deploy/base/issuer-state-rbac.yaml (RBAC included).
// The load, the issuers, kube-apiserver and etcd share the machine's cores: the numbers are what one machine does end
// to end. Phases run interleaved (data dir, Kubernetes ×1, Kubernetes ×2 for each level, ROUNDS times) so a loaded
// machine disturbs all alike; a figure is the median (min–max) over the rounds.
// Knobs: ISSUER_BENCH_CONCURRENCY (levels, default 4,8,16), ISSUER_BENCH_DURATION_MS (4000), ISSUER_BENCH_ROUNDS (3),
// ISSUER_BENCH_BACKENDS (data-dir,kubernetes), ISSUER_BENCH_BASELINE (a built checkout whose data-dir issuer and
// Kubernetes replicas run beside, in the same rounds), ISSUER_BENCH_ISSUER_NODE_ARGS (Node flags of the issuers), ISSUER_BENCH_CONSUMERS (= the highest level: one consumer per client,
// as two signed nonce requests of one consumer in the same millisecond are the same request).
import { execFileSync, spawn } from 'node:child_process';
import { createPrivateKey, createPublicKey } from 'node:crypto';
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { loadStartControlPlane } from './lib/test-helpers.mjs';
import { formatSummary, loadText, summary, verdict } from './lib/report.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const { generateClusterKeyPair } = await import(`${root}dist/wire/tenant-cert/keys.js`);
const { buildCsr } = await import(`${root}dist/wire/tenant-cert/csr.js`);
const { signNonceRequest, signTenant } = await import(`${root}dist/wire/tenant-cert/message.js`);

const CLI = join(root, 'bin', 'clusterprofile.mjs');
const LEVELS = String(process.env.ISSUER_BENCH_CONCURRENCY ?? '4,8,16')
  .split(',')
  .map(Number);
const CONCURRENCY = Math.max(...LEVELS);
const DURATION_MS = Number(process.env.ISSUER_BENCH_DURATION_MS ?? 4000);
const ROUNDS = Number(process.env.ISSUER_BENCH_ROUNDS ?? 3);
const BACKENDS = String(process.env.ISSUER_BENCH_BACKENDS ?? 'data-dir,kubernetes').split(',');
const CONSUMERS = Number(process.env.ISSUER_BENCH_CONSUMERS ?? CONCURRENCY);
const WARMUP_MS = 1000;
// Node flags for the issuer processes only, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` (space-separated).
const ISSUER_NODE_ARGS = String(process.env.ISSUER_BENCH_ISSUER_NODE_ARGS ?? '')
  .split(' ')
  .filter((arg) => arg !== '');
const PROVIDER = 'bench-provider';
/** A built checkout whose data-dir issuer runs beside this one (ISSUER_BENCH_BASELINE=/path/to/checkout). */
const BASELINE = process.env.ISSUER_BENCH_BASELINE;
const NAMESPACE = 'bench-issuer';

const work = mkdtempSync(join(tmpdir(), 'cpc-issuer-bench-'));
const dataDir = join(work, 'data');
const children = [];
const agents = [];
let controlPlane;

const consumers = [];
for (let index = 0; index < CONSUMERS; index++) {
  const id = `bench-${index}`;
  const pair = generateClusterKeyPair('ed25519');
  const privateKey = createPrivateKey(pair.privateKeyPem);
  writeFileSync(join(work, `${id}.pub`), pair.publicKeyPem);
  const csr = await buildCsr(privateKey, { commonName: id });
  consumers.push({
    id,
    privateKey,
    csr,
    publicKey: Buffer.from(createPublicKey(privateKey).export({ type: 'spki', format: 'pem' })).toString('base64'),
    csrB64: Buffer.from(csr.pem).toString('base64'),
  });
}

function trustAll(stateArgs, cli = CLI) {
  return Promise.all(
    consumers.map(
      (consumer) =>
        new Promise((resolve, reject) => {
          const child = spawn(
            process.execPath,
            [
              cli,
              'issuer',
              'trust',
              ...stateArgs,
              '--cluster-id',
              consumer.id,
              '--public-key',
              join(work, `${consumer.id}.pub`),
            ],
            { stdio: ['ignore', 'ignore', 'pipe'] },
          );
          let stderr = '';
          child.stderr.setEncoding('utf8').on('data', (chunk) => (stderr += chunk));
          child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`issuer trust failed: ${stderr}`))));
        }),
    ),
  );
}

let issuers = 0;
async function startIssuer(args, cli = CLI) {
  // The log goes to a file (as a log collector would read it), not a pipe this process must drain.
  const logFile = join(work, `issuer-${issuers++}.log`);
  const logFd = openSync(logFile, 'a');
  const child = spawn(
    process.execPath,
    [...ISSUER_NODE_ARGS, cli, 'issuer', 'serve', '--listen', '127.0.0.1:0', '--cluster-id', PROVIDER, ...args],
    { stdio: ['ignore', 'pipe', logFd] },
  );
  closeSync(logFd);
  children.push(child);
  const url = await new Promise((resolve, reject) => {
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk) => {
      out += chunk;
      if (out.includes('\n')) resolve(out.split('\n')[0].trim());
    });
    child.on('exit', (code) =>
      reject(new Error(`issuer exited ${code}: ${readFileSync(logFile, 'utf8').slice(-4000)}`)),
    );
  });
  return { url, child };
}

function target(issuer, caPem) {
  const agent = new Agent({ connect: { ca: caPem }, connections: CONCURRENCY, pipelining: 1 });
  agents.push(agent);
  return { ...issuer, agent };
}

async function post(to, path, body) {
  const response = await request(`${to.url}${path}`, {
    method: 'POST',
    dispatcher: to.agent,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await response.body.text();
  if (response.statusCode !== 201) {
    throw new Error(`${path}: HTTP ${response.statusCode} ${text}`);
  }
  return JSON.parse(text);
}

async function handshake(to, consumer) {
  const nonce = await post(
    to,
    '/v1/nonces',
    signNonceRequest(consumer.privateKey, { consumerClusterID: consumer.id, providerClusterID: PROVIDER }, new Date()),
  );
  const signature = signTenant(consumer.privateKey, {
    providerClusterID: PROVIDER,
    consumerClusterID: consumer.id,
    nonce: nonce.nonce,
    csrDer: consumer.csr.der,
  });
  const identity = await post(to, '/v1/tenants', {
    apiVersion: 'credentials.clusterprofile.io/v1alpha1',
    kind: 'Tenant',
    metadata: { name: consumer.id },
    spec: {
      clusterID: consumer.id,
      providerClusterID: PROVIDER,
      nonce: nonce.nonce,
      publicKey: consumer.publicKey,
      csr: consumer.csrB64,
      signature: signature.toString('base64'),
    },
  });
  if (typeof identity.spec?.authParams?.signedCRT !== 'string') {
    throw new Error('no certificate');
  }
}

/** CPU seconds (user + system) a process has used so far (Linux /proc; clock ticks of 1/100 s). */
function cpuSeconds(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
}

async function phase(targets, ms, record, concurrency) {
  const latencies = [];
  const end = performance.now() + ms;
  let errors = 0;
  let firstError;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, worker) => {
      const consumer = consumers[worker % consumers.length];
      const to = targets[worker % targets.length];
      while (performance.now() < end) {
        const started = performance.now();
        try {
          await handshake(to, consumer);
          if (record) latencies.push(performance.now() - started);
        } catch (error) {
          errors += 1;
          firstError ??= String(error);
        }
      }
    }),
  );
  return { latencies, errors, firstError };
}

/** The pids of this run's control plane (etcd, kube-apiserver, kube-controller-manager): their command lines name its work dir. */
function controlPlanePids() {
  if (controlPlane === undefined) return [];
  const pids = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(controlPlane.workDir)) pids.push(Number(entry));
    } catch {
      // gone
    }
  }
  return pids;
}

async function measure(setup, concurrency) {
  await phase(setup.targets, WARMUP_MS, false, concurrency);
  const plane = setup.name.startsWith('kubernetes') ? controlPlanePids() : [];
  const cpuOf = (pids) => pids.reduce((sum, pid) => sum + cpuSeconds(pid), 0);
  const issuerBefore = cpuOf(setup.targets.map((t) => t.child.pid));
  const planeBefore = cpuOf(plane);
  const clientBefore = process.cpuUsage();
  const load = loadavg()[0];
  const started = performance.now();
  const { latencies, errors, firstError } = await phase(setup.targets, DURATION_MS, true, concurrency);
  const seconds = (performance.now() - started) / 1000;
  const client = process.cpuUsage(clientBefore);
  const n = Math.max(1, latencies.length);
  const issuerCpuMs = ((cpuOf(setup.targets.map((t) => t.child.pid)) - issuerBefore) * 1000) / n;
  const planeCpuMs = ((cpuOf(plane) - planeBefore) * 1000) / n;
  const clientCpuMs = (client.user + client.system) / 1000 / n;
  latencies.sort((a, b) => a - b);
  const pct = (p) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? NaN;
  return {
    rate: latencies.length / seconds,
    p50: pct(50),
    p99: pct(99),
    errors,
    firstError,
    issuerCpuMs,
    planeCpuMs,
    clientCpuMs,
    totalCpuMs: issuerCpuMs + planeCpuMs + clientCpuMs,
    load,
  };
}

/**
 * Two replicas of `cli` on the Kubernetes state in `namespace`, with a token of the ServiceAccount of that checkout's
 * deploy/base/issuer-state-rbac.yaml (its own Role: a baseline build gets the RBAC it was written for).
 */
async function kubernetesReplicas(kubectl, namespace, checkout, cli, label) {
  kubectl(['create', 'namespace', namespace]);
  kubectl(
    ['apply', '-f', '-'],
    readFileSync(join(checkout, 'deploy/base/issuer-state-rbac.yaml'), 'utf8').replaceAll(
      'clusterprofile-system',
      namespace,
    ),
  );
  const token = kubectl(['-n', namespace, 'create', 'token', 'clusterprofile-issuer', '--duration', '2h']).trim();
  const caPem = readFileSync(controlPlane.caFile, 'utf8');
  const kubeconfig = join(work, `issuer-sa-${namespace}.kubeconfig`);
  writeFileSync(
    kubeconfig,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'p',
          cluster: { server: controlPlane.server, 'certificate-authority-data': Buffer.from(caPem).toString('base64') },
        },
      ],
      users: [{ name: 'issuer', user: { token } }],
      contexts: [{ name: 'p', context: { cluster: 'p', user: 'issuer', namespace } }],
      'current-context': 'p',
    }),
    { mode: 0o600 },
  );
  await trustAll(
    ['--state', 'kubernetes', '--kubeconfig', controlPlane.adminKubeconfig, '--namespace', namespace],
    cli,
  );
  const args = ['--state', 'kubernetes', '--kubeconfig', kubeconfig];
  const [a, b] = await Promise.all([startIssuer(args, cli), startIssuer(args, cli)]);
  const servingCa = Buffer.from(
    JSON.parse(kubectl(['-n', namespace, 'get', 'secret', 'clusterprofile-issuer-serving-ca', '-o', 'json'])).data[
      'tls.crt'
    ],
    'base64',
  ).toString('utf8');
  return [
    { name: `kubernetes ×1${label}`, targets: [target(a, servingCa)] },
    { name: `kubernetes ×2${label}`, targets: [target(a, servingCa), target(b, servingCa)] },
  ];
}

async function kubernetesSetups() {
  const { ensureControlPlaneBinaries } = await import('../test/e2e/controlplane/build.mjs');
  const startControlPlane = await loadStartControlPlane(root, 'issuer');
  const binaries = await ensureControlPlaneBinaries({ log: () => {} });
  controlPlane = await startControlPlane({ binaries, log: () => {} });
  const kubectl = (args, input) =>
    execFileSync('kubectl', ['--kubeconfig', controlPlane.adminKubeconfig, ...args], { input, encoding: 'utf8' });
  const versions = Object.values(binaries.versions).join(', ');
  const setups = await kubernetesReplicas(kubectl, NAMESPACE, root, CLI, '');
  if (BASELINE !== undefined) {
    // The baseline build's Kubernetes state beside this one: same control plane, its own namespace, interleaved phases.
    setups.push(
      ...(await kubernetesReplicas(
        kubectl,
        `${NAMESPACE}-base`,
        BASELINE,
        join(BASELINE, 'bin', 'clusterprofile.mjs'),
        ' (base)',
      )),
    );
  }
  return setups.map((setup) => ({ ...setup, versions }));
}

try {
  console.log(
    `issuer handshakes (signed nonce request + Tenant -> Identity, embedded CA, Ed25519 consumers), ${cpus().length} CPUs, ` +
      `${DURATION_MS / 1000} s per phase, ${ROUNDS} interleaved rounds; load ${loadText()} at start`,
  );
  const setups = [];
  if (BACKENDS.includes('data-dir')) {
    await trustAll(['--data-dir', dataDir]);
    const issuer = await startIssuer(['--data-dir', dataDir]);
    setups.push({ name: 'data dir', targets: [target(issuer, readFileSync(join(dataDir, 'serving-ca.crt'), 'utf8'))] });
  }
  if (BASELINE !== undefined) {
    // The same data-dir issuer from another build (e.g. the commit before a change), measured in the same rounds.
    const baselineCli = join(BASELINE, 'bin', 'clusterprofile.mjs');
    const baselineDir = join(work, 'baseline-data');
    await trustAll(['--data-dir', baselineDir], baselineCli);
    const issuer = await startIssuer(['--data-dir', baselineDir], baselineCli);
    setups.push({
      name: 'data dir (base)',
      targets: [target(issuer, readFileSync(join(baselineDir, 'serving-ca.crt'), 'utf8'))],
    });
  }
  if (BACKENDS.includes('kubernetes')) {
    const made = await kubernetesSetups();
    console.log(
      `  control plane ${controlPlane.server} (${made[0].versions}) started in this run; issuers use the ServiceAccount of deploy/base/issuer-state-rbac.yaml`,
    );
    setups.push(...made);
  }
  const results = new Map();
  for (let round = 0; round < ROUNDS; round++) {
    for (const concurrency of LEVELS) {
      for (const setup of setups) {
        const measured = await measure(setup, concurrency);
        const key = `${setup.name}|${concurrency}`;
        results.set(key, [...(results.get(key) ?? []), measured]);
        if (measured.errors > 0)
          console.error(
            `  ${setup.name} c${concurrency} round ${round + 1}: ${measured.errors} errors, first: ${measured.firstError}`,
          );
      }
    }
  }
  console.log(
    '  median (min–max) over the rounds; CPU ms per handshake of the issuer(s), of etcd + kube-apiserver (+ controller-manager), of this load generator',
  );
  console.log(
    '  backend              conc  handshakes/s      p50 ms               p99 ms                  CPU issuer  CPU api+etcd  CPU client  capacity*  errors  load (1 min)',
  );
  for (const setup of setups) {
    for (const concurrency of LEVELS) {
      const runs = results.get(`${setup.name}|${concurrency}`);
      const of = (field) => summary(runs.map((run) => run[field]));
      const capacity = (1000 * cpus().length) / of('totalCpuMs').median;
      console.log(
        `  ${setup.name.padEnd(20)} ${String(concurrency).padStart(4)}  ${formatSummary(of('rate'), 0).padEnd(16)}  ${formatSummary(of('p50'), 1).padEnd(19)}  ` +
          `${formatSummary(of('p99'), 1).padEnd(22)}  ${of('issuerCpuMs').median.toFixed(2).padStart(10)}  ${of('planeCpuMs').median.toFixed(2).padStart(12)}  ` +
          `${of('clientCpuMs').median.toFixed(2).padStart(10)}  ${capacity.toFixed(0).padStart(8)}/s  ${String(runs.reduce((sum, r) => sum + r.errors, 0)).padStart(6)}  ${formatSummary(of('load'), 1)}`,
      );
    }
  }
  console.log(
    `  * capacity: ${cpus().length} cores' worth of CPU time divided by the CPU all parties spent per handshake: what this machine would do with nothing else on it`,
  );
  const best = (name, test) =>
    LEVELS.map((concurrency) => ({ concurrency, runs: results.get(`${name}|${concurrency}`) }))
      .filter((entry) => entry.runs !== undefined)
      .map((entry) => ({
        ...entry,
        rate: summary(entry.runs.map((r) => r.rate)).median,
        p99: summary(entry.runs.map((r) => r.p99)).median,
        errors: entry.runs.reduce((s, r) => s + r.errors, 0),
      }))
      .filter(test)
      .sort((x, y) => y.rate - x.rate)[0];
  if (results.has('data dir|4')) {
    const runs = results.get('data dir|4');
    const rate = summary(runs.map((r) => r.rate)).median;
    verdict(rate >= 600, 'data dir at concurrency 4', `${rate.toFixed(0)}/s (median of ${runs.length})`, '>= 600/s');
  }
  for (const name of ['kubernetes ×1', 'kubernetes ×2', 'kubernetes ×1 (base)', 'kubernetes ×2 (base)']) {
    if (!setups.some((setup) => setup.name === name)) continue;
    const met = best(name, (entry) => entry.rate >= 200 && entry.p99 <= 50 && entry.errors === 0);
    const top = best(name, () => true);
    verdict(
      met !== undefined,
      `${name}: >= 200/s with p99 <= 50 ms at one level`,
      met === undefined
        ? `best ${top.rate.toFixed(0)}/s at concurrency ${top.concurrency} (p99 ${top.p99.toFixed(1)} ms)`
        : `${met.rate.toFixed(0)}/s, p99 ${met.p99.toFixed(1)} ms at concurrency ${met.concurrency}`,
      '>= 200/s, p99 <= 50 ms',
    );
  }
  console.log(`  load ${loadText()} at the end`);
} finally {
  await Promise.all(agents.map((agent) => agent.close()));
  for (const child of children) child.kill('SIGTERM');
  await Promise.all(
    children.map((child) =>
      child.exitCode !== null ? undefined : new Promise((resolve) => child.once('exit', resolve)),
    ),
  );
  await controlPlane?.stop();
  rmSync(work, { recursive: true, force: true });
}
