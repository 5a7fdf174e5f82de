/**
 * Helpers for the `clusterprofile` CLI tests: captured stdio for in-process `run`, and a child-process runner for the
 * built bin (bin/clusterprofile.mjs), which inherits the PATH npm gives the test run (Node 24).
 */
import { spawn } from 'node:child_process';
import { PassThrough, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { ProcessIo } from '../../src/base/io.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const BIN = fileURLToPath(new URL('../../bin/clusterprofile.mjs', import.meta.url));

export interface Captured {
  io: ProcessIo;
  stdout(): string;
  stderr(): string;
}

export function captureIo(): Captured {
  let out = '';
  let err = '';
  const stdout = new Writable({
    write(chunk, _encoding, done) {
      out += String(chunk);
      done();
    },
  });
  const stderr = new Writable({
    write(chunk, _encoding, done) {
      err += String(chunk);
      done();
    },
  });
  return { io: { stdin: new PassThrough(), stdout, stderr }, stdout: () => out, stderr: () => err };
}

export interface BinResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the built `clusterprofile` bin with `args`, `env` (merged over a minimal PATH/HOME) and `cwd`. */
export function runBin(
  args: string[],
  options: { env?: Record<string, string>; cwd?: string } = {},
): Promise<BinResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: options.cwd ?? ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/nonexistent', ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += String(chunk)));
    child.stderr.on('data', (chunk) => (stderr += String(chunk)));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
