// Memory cgroups for benches that measure a process the way it is deployed: in a pod with `resources.limits.memory`.
// Node.js sizes V8's heap from the cgroup's limit (`process.constrainedMemory()`), so RSS under a limit differs from
// RSS on a host without one. Each measured process gets a fresh child of the bench's own memory cgroup (cgroup v1:
// memory.limit_in_bytes; cgroup v2: memory.max), is moved in before Node starts, and the cgroup is removed afterwards.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const UNITS = { '': 1, k: 1e3, K: 1e3, M: 1e6, G: 1e9, T: 1e12, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40 };

/**
 * `1Gi,none` → [{ label: '1Gi', bytes: 1073741824 }, { label: 'none' }]: Kubernetes quantities (Ki, Mi, Gi, Ti, or
 * k, M, G, T), plain bytes, or `none` (no limit). Throws an Error whose message names the flag.
 */
export function parseMemoryLimits(text, flag) {
  if (text === undefined || text === '' || text.startsWith('--')) {
    throw new Error(
      `${flag} needs a value: a size such as 1Gi, 512Mi or 1073741824 (bytes), or none; several separated by commas`,
    );
  }
  return text.split(',').map((part) => {
    const label = part.trim();
    if (label === 'none') return { label };
    const match = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|K|M|G|T)?$/.exec(label);
    const bytes = match === null ? Number.NaN : Math.round(Number(match[1]) * UNITS[match[2] ?? '']);
    // Below ~64 MiB Node itself does not start; the limit is for a whole fleet process.
    if (!Number.isSafeInteger(bytes) || bytes < 64 * 2 ** 20) {
      throw new Error(
        `${flag}: '${label}' is not a memory size of at least 64Mi (use e.g. 1Gi, 512Mi, 1073741824 for bytes, or none)`,
      );
    }
    return { label, bytes };
  });
}

/** `1073741824` → `1024 MiB`; the "no limit" values of cgroups and libuv (≥ 2^62) → `none`. */
export function formatLimit(bytes) {
  if (bytes === undefined || bytes === 0 || bytes >= 2 ** 62) return 'none';
  return `${(bytes / 2 ** 20).toFixed(0)} MiB`;
}

/** Where this process's memory cgroup is mounted for `fstype` (and, for v1, the memory controller). */
function mountOf(fstype) {
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const [left, right] = line.split(' - ');
    if (right === undefined) continue;
    const [type, , superOptions] = right.split(' ');
    if (type !== fstype) continue;
    if (fstype === 'cgroup' && !superOptions.split(',').includes('memory')) continue;
    const fields = left.split(' ');
    return { root: fields[3], mountPoint: fields[4] };
  }
  return undefined;
}

/** The directory of `path` (from /proc/self/cgroup) under the mount, or undefined if the mount does not show it. */
function directoryOf(mount, path) {
  if (mount.root === '/') return join(mount.mountPoint, path);
  if (path === mount.root || path.startsWith(`${mount.root}/`))
    return join(mount.mountPoint, path.slice(mount.root.length));
  return undefined;
}

/**
 * The memory cgroup new children can be made in: this process's own (v1 memory controller, else v2 with the memory
 * controller available to its children), checked by making and removing a probe child with a limit.
 * Returns `{ version, parent }` or `{ unavailable: 'why, in one sentence' }`.
 */
export function findMemoryCgroup() {
  let lines;
  try {
    lines = readFileSync('/proc/self/cgroup', 'utf8').trim().split('\n');
  } catch (error) {
    return { unavailable: `/proc/self/cgroup cannot be read (${error.code ?? error.message})` };
  }
  const entries = lines.map((line) => {
    const first = line.indexOf(':');
    const second = line.indexOf(':', first + 1);
    return { controllers: line.slice(first + 1, second).split(','), path: line.slice(second + 1) };
  });
  const v1 = entries.find((entry) => entry.controllers.includes('memory'));
  const v2 = entries.find((entry) => entry.controllers.length === 1 && entry.controllers[0] === '');
  let found;
  if (v1 !== undefined) {
    const mount = mountOf('cgroup');
    const parent = mount === undefined ? undefined : directoryOf(mount, v1.path);
    if (parent === undefined || !existsSync(join(parent, 'memory.limit_in_bytes'))) {
      return { unavailable: `this process's cgroup v1 memory cgroup ${v1.path} is not mounted where it can be seen` };
    }
    found = { version: 1, parent };
  } else if (v2 !== undefined) {
    const mount = mountOf('cgroup2');
    const parent = mount === undefined ? undefined : directoryOf(mount, v2.path);
    if (parent === undefined || !existsSync(join(parent, 'cgroup.controllers'))) {
      return { unavailable: `this process's cgroup v2 cgroup ${v2.path} is not mounted where it can be seen` };
    }
    if (!readFileSync(join(parent, 'cgroup.controllers'), 'utf8').split(/\s+/).includes('memory')) {
      return { unavailable: `the memory controller is not available in this process's cgroup v2 cgroup ${parent}` };
    }
    if (!readFileSync(join(parent, 'cgroup.subtree_control'), 'utf8').split(/\s+/).includes('memory')) {
      try {
        writeFileSync(join(parent, 'cgroup.subtree_control'), '+memory');
      } catch (error) {
        // EBUSY: the cgroup holds processes (this one), so cgroup v2 does not let it give its children controllers.
        return {
          unavailable: `the memory controller cannot be enabled for the children of ${parent} (${error.code ?? error.message})`,
        };
      }
    }
    found = { version: 2, parent };
  } else {
    return { unavailable: 'this process is in no memory cgroup (no cgroup v1 memory controller, no cgroup v2)' };
  }
  try {
    const probe = createMemoryCgroup(found, 2 ** 30, `cpc-bench-probe-${process.pid}`);
    probe.remove();
  } catch (error) {
    return { unavailable: `a memory cgroup cannot be made under ${found.parent} (${error.code ?? error.message})` };
  }
  return found;
}

/** A fresh memory cgroup `name` under `base.parent` limited to `bytes`; throws if it cannot be made or limited. */
export function createMemoryCgroup(base, bytes, name) {
  const dir = join(base.parent, name);
  mkdirSync(dir);
  try {
    writeFileSync(join(dir, base.version === 1 ? 'memory.limit_in_bytes' : 'memory.max'), String(bytes));
    // No swap for the child (a pod's limit counts no swap either); the file exists only with swap accounting.
    if (base.version === 2 && existsSync(join(dir, 'memory.swap.max')))
      writeFileSync(join(dir, 'memory.swap.max'), '0');
  } catch (error) {
    rmdirSync(dir);
    throw error;
  }
  const read = (file) => {
    try {
      return readFileSync(join(dir, file), 'utf8');
    } catch {
      return undefined;
    }
  };
  const field = (text, key) => Number(new RegExp(`^${key} (\\d+)$`, 'm').exec(text ?? '')?.[1] ?? Number.NaN);
  return {
    dir,
    limit: bytes,
    procs: join(dir, 'cgroup.procs'),
    /** The most the cgroup was charged (process memory and page cache) and how often the kernel OOM-killed in it. */
    stats() {
      if (base.version === 1) {
        return {
          limit: bytes,
          peak: Number(read('memory.max_usage_in_bytes')),
          oomKills: field(read('memory.oom_control'), 'oom_kill'),
        };
      }
      return {
        limit: bytes,
        peak: Number(read('memory.peak') ?? Number.NaN),
        oomKills: field(read('memory.events'), 'oom_kill'),
      };
    },
    remove() {
      // Right after the last process exited the kernel may still be tearing it down: EBUSY for a moment.
      for (let attempt = 0; ; attempt += 1) {
        try {
          rmdirSync(dir);
          return;
        } catch (error) {
          if (error.code !== 'EBUSY' || attempt >= 50) throw error;
          spawnSync('sleep', ['0.1']);
        }
      }
    },
  };
}

/** `command args` as a process that moves itself into `cgroup` and then execs the command (same PID, Node not started yet). */
function wrapped(cgroup, command, args) {
  return ['/bin/sh', ['-c', 'echo $$ > "$1" || exit 125; shift; exec "$@"', 'sh', cgroup.procs, command, ...args]];
}

/**
 * spawn(), with the child in a fresh memory cgroup of `limit.bytes` when `base` is a cgroup and the limit is not
 * `none`. Returns the ChildProcess; its `cgroup` (or undefined) has stats() and is removed when the child closes,
 * after `cgroupStats` is set on the child.
 */
let serial = 0;
export function spawnLimited(base, limit, command, args, options) {
  if (base?.parent === undefined || limit?.bytes === undefined) return spawn(command, args, options);
  serial += 1;
  const cgroup = createMemoryCgroup(base, limit.bytes, `cpc-bench-${process.pid}-${serial}`);
  const child = spawn(...wrapped(cgroup, command, args), options);
  child.cgroup = cgroup;
  child.once('close', () => {
    child.cgroupStats = cgroup.stats();
    try {
      cgroup.remove();
    } catch (error) {
      process.stderr.write(`memory cgroup ${cgroup.dir} not removed: ${error.code ?? error.message}\n`);
    }
  });
  return child;
}

/** spawnSync() likewise; the result carries `cgroupStats` when it ran in a cgroup. */
export function spawnSyncLimited(base, limit, command, args, options) {
  if (base?.parent === undefined || limit?.bytes === undefined) return spawnSync(command, args, options);
  serial += 1;
  const cgroup = createMemoryCgroup(base, limit.bytes, `cpc-bench-${process.pid}-${serial}`);
  try {
    const result = spawnSync(...wrapped(cgroup, command, args), options);
    result.cgroupStats = cgroup.stats();
    return result;
  } finally {
    cgroup.remove();
  }
}
