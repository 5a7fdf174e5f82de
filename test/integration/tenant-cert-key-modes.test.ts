/**
 * The tenant-cert key as a non-root pod reads it from a Secret volume: with `defaultMode: 0440` and the pod's
 * `fsGroup`, the kubelet writes it owned by root, group = fsGroup (a supplementary group of the container's process).
 * The plugin runs as a real child process under another user and groups (setpriv) against a real issuer; the key's
 * owner, group and mode are set with chown/chmod. Exactly the read-only-for-our-group case is accepted; everything
 * else is refused (exit 2, ERR_TENANT_CERT_KEY_FILE, the accepted modes in the message, `chmod 600` as the hint).
 */
import { X509Certificate } from 'node:crypto';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CLI,
  execInfo,
  issuerConfig,
  runNode,
  startIssuer,
  V1,
  type RunningIssuer,
} from '../helpers/tenant-cert-plugin-run.js';
import { otherUserProblem, stageBinaries, type StagedBinaries } from '../helpers/other-user.js';
import { runCommand } from '../helpers/process.js';

/** Why the plugin cannot run as another user here (the tests then skip with it in their title). */
const PROBLEM = otherUserProblem();
let staged: StagedBinaries;
/** The pod's user and groups: runAsUser/runAsGroup 65532, fsGroup 65533. */
const USER = 65532;
const GROUP = 65532;
const FS_GROUP = 65533;

let work: string;
let issuer: RunningIssuer;
let servingCa: string;
let clientCa: string;
let keyPem: string;
let runs = 0;

/** Runs the plugin as USER with primary GROUP and supplementary `groups`, no HOME (as in a pod). */
function runAsPod(
  keyFile: string,
  groups: readonly number[] = [FS_GROUP],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const cache = join(work, `cache-${++runs}`);
  mkdirSync(cache, { mode: 0o700 });
  chownSync(cache, USER, GROUP);
  const args = [
    '--cluster-id',
    'consumer-1',
    '--key-file',
    keyFile,
    '--cache-dir',
    cache,
    '--identity-dir',
    join(cache, 'identities'),
  ];
  return runCommand(
    'setpriv',
    [
      `--reuid=${USER}`,
      `--regid=${GROUP}`,
      groups.length === 0 ? '--clear-groups' : `--groups=${groups.join(',')}`,
      '--',
      staged.node,
      staged.bin('clusterprofile-tenant-cert.mjs'),
      ...args,
    ],
    {
      env: {
        PATH: process.env['PATH'],
        KUBERNETES_EXEC_INFO: execInfo(V1, issuerConfig(issuer, servingCa, 'provider-1')),
      },
    },
  );
}

/** The key as the kubelet would write it into a Secret volume: owner, group, mode. */
function mountedKey(name: string, uid: number, gid: number, mode: number): string {
  const file = join(work, 'secret', name);
  writeFileSync(file, keyPem);
  chownSync(file, uid, gid);
  chmodSync(file, mode);
  return file;
}

describe.skipIf(PROBLEM !== undefined)(
  `tenant-cert key file from a Secret volume with fsGroup (the plugin staged in a 0755 directory, run as another user)${PROBLEM === undefined ? '' : ` — skipped: ${PROBLEM}`}`,
  () => {
    beforeAll(async () => {
      staged = stageBinaries();
      work = mkdtempSync(join(tmpdir(), 'cpc-key-modes-'));
      chmodSync(work, 0o755);
      mkdirSync(join(work, 'secret'), { mode: 0o755 });
      const dataDir = join(work, 'issuer');
      issuer = await startIssuer(dataDir, 'provider-1');
      servingCa = readFileSync(join(dataDir, 'serving-ca.crt'), 'utf8');
      clientCa = readFileSync(join(dataDir, 'client-ca.crt'), 'utf8');
      const keyFile = join(work, 'consumer.key');
      const keygen = await runNode(CLI, ['keygen', '--out', keyFile]);
      expect(keygen.code, keygen.stderr).toBe(0);
      writeFileSync(`${keyFile}.pub`, keygen.stdout);
      const trust = await runNode(CLI, [
        'issuer',
        'trust',
        '--data-dir',
        dataDir,
        '--cluster-id',
        'consumer-1',
        '--public-key',
        `${keyFile}.pub`,
      ]);
      expect(trust.code, trust.stderr).toBe(0);
      keyPem = readFileSync(keyFile, 'utf8');
    }, 60_000);

    afterAll(async () => {
      await issuer?.stop();
      if (work !== undefined) rmSync(work, { recursive: true, force: true });
      if (staged !== undefined) rmSync(staged.dir, { recursive: true, force: true });
    });

    it.each([
      [
        "root, group fsGroup (supplementary), 0440: the kubelet's defaultMode 0440 with fsGroup",
        0,
        FS_GROUP,
        0o440,
        [FS_GROUP],
      ],
      ['root, group runAsGroup (primary), 0440', 0, GROUP, 0o440, []],
      ['root, group fsGroup, 0040', 0, FS_GROUP, 0o040, [FS_GROUP]],
      ['this user, group fsGroup, 0440', USER, FS_GROUP, 0o440, [FS_GROUP]],
    ] as const)('accepted: %s', async (_name, uid, gid, mode, groups) => {
      const file = mountedKey(`key-${uid}-${gid}-${mode.toString(8)}`, uid, gid, mode);
      const result = await runAsPod(file, groups);
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      const credential = JSON.parse(result.stdout) as {
        status: { clientCertificateData: string; clientKeyData: string };
      };
      expect(
        new X509Certificate(credential.status.clientCertificateData).checkIssued(new X509Certificate(clientCa)),
      ).toBe(true);
      expect(credential.status.clientKeyData).toBe(keyPem);
    });

    it.each([
      // Each of these the process can read (as owner or through fsGroup), and so can someone else.
      ["ours, but its group is not one of the process's", USER, 65534, 0o440, [FS_GROUP]],
      ['owned by another user', 1000, FS_GROUP, 0o440, [FS_GROUP]],
      ['writable by its owner (0640)', 0, FS_GROUP, 0o640, [FS_GROUP]],
      ['writable by the group (0460)', 0, FS_GROUP, 0o460, [FS_GROUP]],
      ['readable by others (0444)', 0, FS_GROUP, 0o444, [FS_GROUP]],
      ['executable by the group (0450)', 0, FS_GROUP, 0o450, [FS_GROUP]],
      ['group 0, even when the process has it (OpenShift gives every pod gid 0)', 0, 0, 0o440, [0, FS_GROUP]],
    ] as const)('refused: %s', async (_name, uid, gid, mode, groups) => {
      const file = mountedKey(`refused-${uid}-${gid}-${mode.toString(8)}-${groups.join('.')}`, uid, gid, mode);
      const result = await runAsPod(file, groups);
      expect(result.code).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr).toContain(
        `ERR_TENANT_CERT_KEY_FILE: the key file is accessible by others (mode ${mode.toString(8).padStart(4, '0')}, owner ${uid}, group ${gid}); refusing to use it. Accepted: `,
      );
      expect(result.stderr).toContain("defaultMode: 0440 and the pod's fsGroup");
      expect(result.stderr).toContain(`hint: chmod 600 ${file}`);
      expect(result.stderr).not.toContain(keyPem.split('\n')[1]!);
    });
  },
);
