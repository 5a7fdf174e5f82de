// Real processes for the tenant-cert plugin integration tests: the built `clusterprofile` CLI (keygen, issuer serve,
// issuer trust, identity import) and `clusterprofile-tenant-cert`, plus in-process HTTPS stand-ins for a misbehaving
// issuer and a counting reverse proxy in front of the real one.
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { runNode as runNodeProcess } from './process.js';
import { fileURLToPath } from 'node:url';
import type { TestCa } from './tls.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const CLI = join(ROOT, 'bin', 'clusterprofile.mjs');
export const PLUGIN = join(ROOT, 'bin', 'clusterprofile-tenant-cert.mjs');
export const V1 = 'client.authentication.k8s.io/v1';
export const V1BETA1 = 'client.authentication.k8s.io/v1beta1';

export interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Runs `node <script> ...args` with PATH/HOME plus `env`; stdin empty unless given. */
export function runNode(
  script: string,
  args: readonly string[],
  env: Record<string, string | undefined> = {},
  stdin?: string,
): Promise<Result> {
  return runNodeProcess(script, args, { env, ...(stdin === undefined ? {} : { stdin }) });
}

export function execInfo(apiVersion: string, config: unknown, server = 'https://member.example:6443'): string {
  return JSON.stringify({
    kind: 'ExecCredential',
    apiVersion,
    spec: { interactive: false, cluster: { server, config } },
  });
}

export interface PluginSetup {
  clusterID: string;
  keyFile: string;
  cacheDir: string;
  identityDir: string;
  config: Record<string, unknown>;
}

/** Runs the plugin as client-go would (KUBERNETES_EXEC_INFO, args); `extra` args are appended. */
export function runPlugin(setup: PluginSetup, apiVersion = V1, extra: readonly string[] = []): Promise<Result> {
  return runNode(
    PLUGIN,
    [
      '--cluster-id',
      setup.clusterID,
      '--key-file',
      setup.keyFile,
      '--cache-dir',
      setup.cacheDir,
      '--identity-dir',
      setup.identityDir,
      ...extra,
    ],
    { KUBERNETES_EXEC_INFO: execInfo(apiVersion, setup.config) },
  );
}

export interface RunningIssuer {
  url: string;
  port: number;
  dataDir: string;
  child: ChildProcess;
  output(): string;
  stop(): Promise<void>;
}

/** Starts `clusterprofile issuer serve` on 127.0.0.1 (port 0 unless given) and waits until it says where it listens. */
export async function startIssuer(
  dataDir: string,
  clusterID: string,
  extra: readonly string[] = [],
  port = 0,
): Promise<RunningIssuer> {
  const child = spawn(
    process.execPath,
    [
      CLI,
      'issuer',
      'serve',
      '--data-dir',
      dataDir,
      '--listen',
      `127.0.0.1:${port}`,
      '--cluster-id',
      clusterID,
      ...extra,
    ],
    { env: { PATH: process.env['PATH'], HOME: process.env['HOME'] }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`issuer did not start in 20 s:\n${output}`)), 20_000);
    const look = (chunk: string): void => {
      output += chunk;
      const match = /https:\/\/127\.0\.0\.1:(\d+)/.exec(output);
      if (match !== null && match[1] !== '0') {
        clearTimeout(timer);
        resolve(match[0]);
      }
    };
    child.stdout?.setEncoding('utf8').on('data', look);
    child.stderr?.setEncoding('utf8').on('data', look);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`issuer exited with ${String(code)}:\n${output}`));
    });
  });
  return {
    url,
    port: Number(new URL(url).port),
    dataDir,
    child,
    output: () => output,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) {
          resolve();
          return;
        }
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** `spec.cluster.config` for an issuer started with {@link startIssuer}. */
export function issuerConfig(
  issuer: { url: string },
  servingCaPem: string,
  providerClusterID: string,
): Record<string, unknown> {
  return { issuerURL: issuer.url, issuerCA: Buffer.from(servingCaPem).toString('base64'), providerClusterID };
}

/** The cache entries (JSON files) in a plugin cache directory. */
export function cacheEntries(cacheDir: string): string[] {
  try {
    return readdirSync(cacheDir)
      .filter((name) => name.endsWith('.json'))
      .map((name) => join(cacheDir, name));
  } catch {
    return [];
  }
}

/** Moves the expiry of every cached credential into the past, as if time had passed. */
export function expireCache(cacheDir: string): void {
  for (const file of cacheEntries(cacheDir)) {
    const entry = JSON.parse(readFileSync(file, 'utf8')) as { status: { expirationTimestamp?: string } };
    entry.status.expirationTimestamp = '2000-01-01T00:00:00Z';
    writeFileSync(file, JSON.stringify(entry), { mode: 0o600 });
  }
}

export interface StandIn {
  url: string;
  /** Requests by `METHOD path`. */
  counts: Map<string, number>;
  close(): Promise<void>;
}

/** An HTTPS server on 127.0.0.1:0 with a serving certificate from `ca`, answering with `handler`. */
export async function startStandIn(
  ca: TestCa,
  handler: (req: IncomingMessage, res: ServerResponse, body: string) => void,
): Promise<StandIn> {
  const serving = await ca.issueServerCert();
  const counts = new Map<string, number>();
  const sockets = new Set<import('node:net').Socket>();
  const server = https.createServer({ cert: serving.cert, key: serving.key }, (req, res) => {
    const key = `${req.method} ${req.url}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
    let body = '';
    req.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    req.on('end', () => handler(req, res, body));
  });
  server.on('secureConnection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as import('node:net').AddressInfo).port;
  return {
    url: `https://127.0.0.1:${port}`,
    counts,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A reverse proxy in front of the real issuer that counts what passes (the issuer's serving CA is trusted). */
export async function startCountingProxy(ca: TestCa, target: string, targetCaPem: string): Promise<StandIn> {
  return startStandIn(ca, (req, res, body) => {
    const upstream = https.request(
      new URL(req.url ?? '/', target),
      { method: req.method, headers: { ...req.headers, host: new URL(target).host }, ca: targetCaPem },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => {
      res.writeHead(502).end();
    });
    upstream.end(body);
  });
}
