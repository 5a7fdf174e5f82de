// CPU time of the bench's child processes (Linux /proc; clock ticks of 1/100 s), for benches that split a run's CPU
// between the program measured and the control plane it talks to.
import { readdirSync, readFileSync } from 'node:fs';

/** Every direct child of this process: its pid, command name and CPU seconds (user + system) so far. */
export function childProcessesCpu() {
  const children = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let stat;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue; // gone
    }
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[1]) !== process.pid) continue;
    children.push({ pid: Number(name), comm, seconds: (Number(fields[11]) + Number(fields[12])) / 100 });
  }
  return children;
}

/** CPU seconds of this process's children other than node (named MainThread by Node 24), by command (etcd, kube-apiserver, ...). */
export function controlPlaneCpu() {
  const cpu = {};
  for (const child of childProcessesCpu())
    if (child.comm !== 'node' && child.comm !== 'MainThread') cpu[child.comm] = (cpu[child.comm] ?? 0) + child.seconds;
  return cpu;
}

/** What each command spent between two {@link controlPlaneCpu} readings. */
export function cpuSince(before, after) {
  return Object.fromEntries(Object.keys(after).map((comm) => [comm, after[comm] - (before[comm] ?? 0)]));
}
