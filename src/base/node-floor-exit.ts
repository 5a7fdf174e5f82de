/**
 * First import of every bin stub (bin/*.mjs): on a Node.js older than the floor, one line on stderr,
 * `<binary>: ERR_NODE_VERSION: Node.js 20.20.2 (/usr/bin/node) is too old: ...`, and exit 1, before the binary's
 * code is loaded. `#!/usr/bin/env node` runs whichever node is first on PATH; the line names it.
 *
 * Once per caller: client-go passes a plugin's stderr straight to its own and runs a failing plugin again at once
 * (kubectl's first discovery makes two requests, each running the plugin, then retries), so every run would print
 * the same line to the same terminal. A run as a credential plugin (KUBERNETES_EXEC_INFO set) whose parent process
 * ran this binary into the same refusal less than {@link QUIET_MS} ago keeps quiet; it still exits 1. The parent's
 * runs are remembered by an empty marker file, `<tmpdir>/clusterprofile-node-floor-<uid>-<parent pid>-<binary>`
 * (mode 0600, trusted only when this user owns it); without one (a read-only tmpdir) every run prints.
 */
import { NODE_FLOOR_CODE, nodeFloorProblem } from './node-floor.js';

/** How long after a printed refusal the same caller's runs keep quiet: longer than kubectl takes to retry one command, even on a loaded machine. */
const QUIET_MS = 30_000;

const problem = nodeFloorProblem();
if (problem !== undefined) {
  const binary = (/[^\\/]+$/.exec(process.argv[1] ?? '')?.[0] ?? 'clusterprofile').replace(/\.mjs$/, '');
  if (!refusedJustNow(binary)) process.stderr.write(`${binary}: ${NODE_FLOOR_CODE}: ${problem}\n`);
  process.exit(1);
}

/** True when this binary's parent saw the refusal less than QUIET_MS ago; else records that it sees it now. */
function refusedJustNow(binary: string): boolean {
  // Only on the refusal path, and only through process.getBuiltinModule (Node.js ≥ 20.16): the bin stubs' hit path
  // on a supported Node.js imports nothing more than before.
  const fs = process.getBuiltinModule?.('node:fs');
  const os = process.getBuiltinModule?.('node:os');
  const uid = process.getuid?.();
  if (process.env['KUBERNETES_EXEC_INFO'] === undefined || fs === undefined || os === undefined || uid === undefined) {
    return false;
  }
  const marker = `${os.tmpdir()}/clusterprofile-node-floor-${uid}-${process.ppid}-${binary}`;
  try {
    const seen = fs.lstatSync(marker);
    if (seen.isFile() && seen.uid === uid && Date.now() - seen.mtimeMs < QUIET_MS) return true;
    fs.rmSync(marker, { force: true });
  } catch {
    // No marker yet (or none we may trust): this run prints.
  }
  try {
    fs.writeFileSync(marker, '', { flag: 'wx', mode: 0o600 });
  } catch {
    // Unwritable tmpdir, or another run's marker: this run prints all the same.
  }
  return false;
}
