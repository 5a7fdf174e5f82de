/**
 * "A complete example" of docs/guides/token-request.md, run as written against the real API server (which plays the member
 * cluster): the RBAC of deploy/token-request-rbac.yaml applied by the member's admin, the providers file and the
 * ClusterProfile of the page (with this server, its CA and the test's directory in place of the example's), a
 * bootstrap kubeconfig for the user `hub-cluster`, and the check: kubectl reaches the member as the service account.
 */
import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { clientCertKubeconfig, e2eContext } from '../helpers/controlplane-e2e.js';
import { codeBlocks, runLines, shellLines, writeFiles, type ShellRun } from '../helpers/markdown-run.js';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const page = readFileSync(join(repo, 'docs', 'guides', 'token-request.md'), 'utf8');
const section = page.slice(
  page.indexOf('## A complete example'),
  page.indexOf('\n## ', page.indexOf('## A complete example') + 1),
);
const blocks = codeBlocks(section);
const lines = shellLines(blocks);

let dir = '';
let files: string[] = [];
let ran: ShellRun[] = [];

describe('docs/guides/token-request.md, a complete example, on a real API server', () => {
  beforeAll(async () => {
    const { controlPlane } = e2eContext();
    dir = mkdtempSync(join(tmpdir(), 'cpc-tr-example-'));
    const caBase64 = Buffer.from(await readFile(controlPlane.caFile, 'utf8')).toString('base64');
    files = writeFiles(blocks, dir, (body) =>
      body
        .replaceAll('https://member-1.example.com:6443', controlPlane.server)
        .replaceAll('LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==', caBase64)
        .replaceAll('/etc/fleet/', `${dir}/`),
    );
    // The hub's bootstrap identity: a client certificate for the user the manifest binds.
    writeFileSync(join(dir, 'bootstrap.kubeconfig'), readFileSync(await clientCertKubeconfig('hub-cluster'), 'utf8'), {
      mode: 0o600,
    });
    mkdirSync(join(dir, 'node_modules'));
    symlinkSync(repo, join(dir, 'node_modules', 'clusterprofile-credentials'));
    mkdirSync(join(dir, 'bin'));
    for (const binary of ['clusterprofile', 'clusterprofile-token-request']) {
      symlinkSync(join(repo, 'bin', `${binary}.mjs`), join(dir, 'bin', binary));
    }
    ran = await runLines(lines, dir, {
      PATH: [join(dir, 'bin'), dirname(process.execPath), process.env['PATH'] ?? ''].join(delimiter),
      HOME: dir,
      KUBECONFIG: controlPlane.adminKubeconfig, // the member's admin, for step 1
    });
  }, 600_000);

  it('has the providers file, the ClusterProfile and the commands', () => {
    expect(files).toEqual(['providers.json', 'member-1.yaml']);
    expect(lines).toHaveLength(4);
  });

  it('every command succeeds and kubectl reaches the member as the service account', () => {
    expect(ran.filter((run) => run.code !== 0)).toEqual([]);
    expect(ran.map((run) => run.line)).toEqual(lines);
    expect(ran.at(-1)!.stdout).toBe('system:serviceaccount:fleet:fleet-workload');
  });

  it('the rendered kubeconfig runs the plugin with the bootstrap kubeconfig of the providers file', () => {
    const kubeconfig = readFileSync(join(dir, 'member-1.kubeconfig'), 'utf8');
    expect(kubeconfig).toContain('"clusterprofile-token-request"');
    expect(kubeconfig).toContain(`"${dir}/bootstrap.kubeconfig"`);
  });
});
