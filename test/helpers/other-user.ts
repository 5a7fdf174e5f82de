/**
 * What a test needs to run a binary as another user (setpriv, as root): the checkout may live where that user cannot
 * enter (a root home, a `mktemp -d` directory, both 0700), so the child is never pointed into it. {@link stageBinaries}
 * copies what the child runs — the bin stubs, the self-contained bundles of dist/bin, the modules the stubs import,
 * the one package a miss chunk loads (yaml) and, when the checkout's Node.js is out of reach too, the node binary —
 * into a fresh 0755 temporary directory. When even that cannot be reached, {@link otherUserProblem} says why, and the
 * tests skip with that reason in their title instead of failing.
 */
import {
  accessSync,
  chmodSync,
  constants,
  copyFileSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, parse } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Binaries staged for another user. */
export interface StagedBinaries {
  /** The 0755 directory holding them. */
  dir: string;
  /** The node binary to run them with (the checkout's, or a copy when it is out of reach). */
  node: string;
  /** The staged bin stub, e.g. `clusterprofile-tenant-cert.mjs`. */
  bin(name: string): string;
}

/** Whether every directory above `path` lets others search it and the file lets others read (and run) it. */
function reachableByOthers(path: string, mode: number): boolean {
  try {
    if ((statSync(path).mode & mode) !== mode) return false;
    for (let dir = dirname(path); ; dir = dirname(dir)) {
      if ((statSync(dir).mode & 0o001) === 0) return false;
      if (dir === parse(dir).root) return true;
    }
  } catch {
    return false;
  }
}

/** Why binaries cannot be run as another user here (not root, no setpriv, no reachable temporary directory), if so. */
export function otherUserProblem(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root for setpriv and chown';
  if (!['/usr/bin/setpriv', '/bin/setpriv'].some((file) => canRun(file))) return 'setpriv is not installed';
  if (!reachableByOthers(tmpdir(), 0o001)) return `the temporary directory ${tmpdir()} is out of other users' reach`;
  return undefined;
}

function canRun(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Copies what a child run as another user executes into a fresh 0755 directory (see the module comment). */
export function stageBinaries(): StagedBinaries {
  const dir = mkdtempSync(join(tmpdir(), 'cpc-other-user-'));
  cpSync(join(ROOT, 'bin'), join(dir, 'bin'), { recursive: true });
  cpSync(join(ROOT, 'dist', 'bin'), join(dir, 'dist', 'bin'), { recursive: true });
  mkdirSync(join(dir, 'dist', 'base'), { recursive: true });
  for (const name of ['node-floor-exit.js', 'node-floor.js'])
    copyFileSync(join(ROOT, 'dist', 'base', name), join(dir, 'dist', 'base', name));
  cpSync(join(ROOT, 'node_modules', 'yaml'), join(dir, 'node_modules', 'yaml'), { recursive: true, dereference: true });
  let node = process.execPath;
  if (!reachableByOthers(node, 0o005)) {
    node = join(dir, 'node');
    copyFileSync(process.execPath, node);
  }
  openUp(dir);
  return { dir, node, bin: (name) => join(dir, 'bin', name) };
}

/** a+rX below `dir` (copies keep the checkout's modes, which may be 0700 or 0600). */
function openUp(path: string): void {
  const stats = statSync(path);
  chmodSync(path, stats.isDirectory() || (stats.mode & 0o100) !== 0 ? 0o755 : 0o644);
  if (stats.isDirectory()) for (const name of readdirSync(path)) openUp(join(path, name));
}
