/**
 * `clusterprofile issuer serve` as a real child process, and an HTTPS client that trusts only the issuer's
 * serving-ca.crt (undici, verifying TLS).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createPrivateKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { signNonceRequest } from '../../src/wire/tenant-cert/message.js';
import type { NonceRequest } from '../../src/wire/tenant-cert/protocol.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const CLI = join(ROOT, 'bin', 'clusterprofile.mjs');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `clusterprofile ...args` with Node 24 (the PATH npm gives tests). */
export function cli(
  args: readonly string[],
  options: { stdin?: string; env?: Record<string, string | undefined>; cwd?: string } = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { PATH: process.env['PATH'], HOME: process.env['HOME'], ...options.env },
      cwd: options.cwd ?? ROOT,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(options.stdin ?? '');
  });
}

export interface IssuerProcess {
  url: string;
  dataDir: string;
  child: ChildProcess;
  log(): string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts the issuer and waits for its ready line (the URL, alone on stdout). */
export async function serveIssuer(
  dataDir: string,
  providerID: string,
  extra: readonly string[] = [],
  env: Record<string, string | undefined> = {},
): Promise<IssuerProcess> {
  return startIssuerProcess(
    ['--data-dir', dataDir, '--listen', '127.0.0.1:0', '--cluster-id', providerID, ...extra],
    env,
    dataDir,
  );
}

/** `clusterprofile issuer serve ...args`, waiting for its ready line; `dataDir` is only reported back. */
export async function startIssuerProcess(
  args: readonly string[],
  env: Record<string, string | undefined> = {},
  dataDir = '',
): Promise<IssuerProcess> {
  const child = spawn(process.execPath, [CLI, 'issuer', 'serve', ...args], {
    env: { PATH: process.env['PATH'], HOME: process.env['HOME'], ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`issuer did not start within 30 s:\n${stderr}`)), 30_000);
    child.stdout!.setEncoding('utf8').on('data', (c: string) => {
      stdout += c;
      const line = stdout.split('\n')[0];
      if (stdout.includes('\n') && line !== undefined) {
        clearTimeout(timer);
        resolve(line.trim());
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`issuer exited with ${String(code)}:\n${stderr}`));
    });
  });
  return {
    url,
    dataDir,
    child,
    log: () => stderr,
    stop: (signal = 'SIGTERM') =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) {
          resolve(child.exitCode);
          return;
        }
        child.once('exit', (code) => resolve(code));
        child.kill(signal);
      }),
  };
}

export interface IssuerClient {
  call(
    method: 'GET' | 'POST',
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<{ status: number; body: any }>;
  close(): Promise<void>;
}

/** HTTPS to the issuer, trusting `ca` (PEM), else DATA_DIR/serving-ca.crt, only. */
export function issuerClient(
  issuer: { url: string; dataDir: string; ca?: string },
  options: { cert?: string; key?: string } = {},
): IssuerClient {
  const agent = new Agent({
    connect: { ca: issuer.ca ?? readFileSync(join(issuer.dataDir, 'serving-ca.crt'), 'utf8'), ...options },
  });
  return {
    async call(method, path, body, headers = {}) {
      const response = await request(`${issuer.url}${path}`, {
        method,
        dispatcher: agent,
        headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
        ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
      });
      const text = await response.body.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        // keep the text
      }
      return { status: response.statusCode, body: parsed };
    },
    close: () => agent.close(),
  };
}

let lastDefaultAt = 0;

/**
 * A `POST /v1/nonces` body signed with the consumer's key (a PEM file or a key), timestamped now (or `at`). Default
 * timestamps never repeat (two requests in one millisecond would be one request: ERR_TENANT_NONCE_REQUEST_REPLAYED).
 */
export function nonceRequest(key: string | KeyObject, consumer: string, provider = 'p1', at?: Date): NonceRequest {
  const privateKey = typeof key === 'string' ? createPrivateKey(readFileSync(key, 'utf8')) : key;
  if (at === undefined) {
    lastDefaultAt = Math.max(Date.now(), lastDefaultAt + 1);
  }
  return signNonceRequest(
    privateKey,
    { consumerClusterID: consumer, providerClusterID: provider },
    at ?? new Date(lastDefaultAt),
  );
}
