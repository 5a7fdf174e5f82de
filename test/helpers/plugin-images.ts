// The plugin images (scripts/image.mjs) for tests: the tools the build and the checks need (installed with apt-get
// when missing), a build into a directory, `umoci unpack`, and a run chrooted into a root filesystem that holds only
// what the test put there — as a controller's pod sees an image volume.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runNode } from './process.js';
import { runCommand } from './process.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));

export const PLUGIN_TYPES = ['tenant-cert', 'token-request', 'oidc'] as const;
export type PluginType = (typeof PLUGIN_TYPES)[number];

export interface ImageReport {
  buildSeconds: number;
  images: Record<PluginType, { compressedBytes: number; uncompressedBytes: number; manifest: string }>;
}

export interface RootRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `command`; its stdout, or an error carrying its stderr. */
export function sh(command: string, args: readonly string[]): string {
  const result = spawnSync(command, args, { encoding: 'utf8', maxBuffer: 1 << 28 });
  if (result.status !== 0)
    throw new Error(
      `${command} ${args.join(' ')} failed (${result.error?.message ?? result.status}):\n${result.stderr}`,
    );
  return result.stdout;
}

const has = (command: string): boolean => spawnSync('sh', ['-c', `command -v ${command}`]).status === 0;

/**
 * Root (chroot, unshare) and the tools: umoci and skopeo for the checks, gcc, the static libc and strip for the build.
 * What is missing is installed from Debian; without root this throws (the tests never skip).
 */
export function ensureImageTools(): void {
  if (process.getuid?.() !== 0) throw new Error('the plugin image tests run chroot and unshare: they need root');
  const missing = [
    ['umoci', 'umoci'],
    ['skopeo', 'skopeo'],
    ['gcc', 'gcc'],
    ['strip', 'binutils'],
  ]
    .filter(([command]) => !has(command!))
    .map(([, pkg]) => pkg!);
  try {
    statSync('/usr/lib/x86_64-linux-gnu/libc.a');
  } catch {
    missing.push('libc6-dev');
  }
  if (missing.length === 0) return;
  const install = ['install', '-y', '--no-install-recommends', ...missing];
  if (spawnSync('apt-get', install).status !== 0) {
    sh('apt-get', ['update']);
    sh('apt-get', install);
  }
}

/** Builds the images of `types` (`cli`: the CLI image) into `out` (layout `out/oci`, refs by type) and returns the build's report. */
export async function buildImages(
  out: string,
  types: readonly (PluginType | 'cli')[] = PLUGIN_TYPES,
): Promise<ImageReport> {
  const build = await runNode(join(REPO, 'scripts/image.mjs'), ['--out', out, '--images', types.join(',')]);
  if (build.code !== 0) throw new Error(`scripts/image.mjs failed:\n${build.stderr}`);
  return JSON.parse(readFileSync(join(out, 'report.json'), 'utf8')) as ImageReport;
}

/** `umoci unpack` of image `ref` of the layout into `bundle`; returns the rootfs directory (the image's files only). */
export function unpackImage(layout: string, ref: string, bundle: string): string {
  sh('umoci', ['unpack', '--image', `${layout}:${ref}`, bundle]);
  return join(bundle, 'rootfs');
}

/**
 * Runs `argv` chrooted into `root`, in new mount and pid namespaces with /proc mounted at `root/proc` (unless `proc`
 * is false), with exactly `env`: no PATH, no HOME unless given.
 */
export function runInRoot(
  root: string,
  argv: readonly string[],
  env: Record<string, string> = {},
  proc = true,
): Promise<RootRun> {
  const namespaces = ['--mount', '--pid', '--fork', ...(proc ? [`--mount-proc=${join(root, 'proc')}`] : [])];
  return runCommand('/usr/bin/unshare', [...namespaces, '/usr/sbin/chroot', root, ...argv], { env });
}

/** A private directory at `path` inside `root`: what a pod's Secret or emptyDir mount would be. */
export function mountDir(root: string, path: string): string {
  const dir = join(root, path);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  return dir;
}

/** All files under `dir`, relative, sorted. */
export function filesUnder(dir: string, prefix = ''): string[] {
  return readdirSync(join(dir, prefix), { withFileTypes: true })
    .flatMap((entry) => (entry.isDirectory() ? filesUnder(dir, join(prefix, entry.name)) : [join(prefix, entry.name)]))
    .sort();
}

/** Whether an ELF executable names a program interpreter (PT_INTERP), i.e. needs a loader at an absolute path. */
export function hasInterpreter(file: string): boolean {
  const elf = readFileSync(file);
  if (elf.subarray(0, 4).toString('latin1') !== '\x7fELF') throw new Error(`${file} is not an ELF file`);
  const phoff = Number(elf.readBigUInt64LE(0x20));
  const phentsize = elf.readUInt16LE(0x36);
  const phnum = elf.readUInt16LE(0x38);
  return Array.from({ length: phnum }, (_, i) => elf.readUInt32LE(phoff + i * phentsize)).includes(3);
}
