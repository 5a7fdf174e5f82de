/**
 * docs/guides/hub-admin.md, run as it is written against the real API server: its files (```yaml title="…") are written to a
 * directory, its shell lines run there one by one with the admin kubeconfig as KUBECONFIG, `clusterprofile` on PATH
 * and the package at node_modules/clusterprofile-credentials. Then both ClusterProfiles (v1alpha1 and v1alpha2) carry
 * their status and `clusterprofile kubeconfig --name` renders each one's server.
 */
import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { e2eContext, kubectl } from '../helpers/controlplane-e2e.js';
import { codeBlocks, runLines, shellLines, writeFiles, type ShellRun } from '../helpers/markdown-run.js';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const blocks = codeBlocks(readFileSync(join(repo, 'docs', 'guides', 'hub-admin.md'), 'utf8'));
const lines = shellLines(blocks);

let dir = '';
let files: string[] = [];
let ran: ShellRun[] = [];

describe('docs/guides/hub-admin.md on a real API server', () => {
  beforeAll(async () => {
    const { controlPlane } = e2eContext();
    dir = mkdtempSync(join(tmpdir(), 'cpc-hub-admin-'));
    files = writeFiles(blocks, dir);
    // The package as an npm install lays it out, `clusterprofile` on PATH, and the providers file the page refers to.
    mkdirSync(join(dir, 'node_modules'));
    symlinkSync(repo, join(dir, 'node_modules', 'clusterprofile-credentials'));
    mkdirSync(join(dir, 'bin'));
    symlinkSync(join(repo, 'bin', 'clusterprofile.mjs'), join(dir, 'bin', 'clusterprofile'));
    writeFileSync(
      join(dir, 'providers.json'),
      JSON.stringify({
        providers: [
          {
            name: 'oidc',
            execConfig: {
              apiVersion: 'client.authentication.k8s.io/v1',
              command: 'clusterprofile-oidc',
              provideClusterInfo: true,
            },
          },
        ],
      }),
    );
    const env = {
      PATH: [join(dir, 'bin'), dirname(process.execPath), process.env['PATH'] ?? ''].join(delimiter),
      HOME: dir,
      KUBECONFIG: controlPlane.adminKubeconfig,
    };
    ran = await runLines(lines, dir, env);
  }, 600_000);

  it('has the files of both versions and the commands', () => {
    expect(files).toEqual(['cluster-east.yaml', 'cluster-east-status.yaml', 'cluster-west.yaml']);
    expect(lines.length).toBeGreaterThan(8);
  });

  it('every command of the page succeeds', () => {
    expect(ran.filter((result) => result.code !== 0)).toEqual([]);
    expect(ran.map((result) => result.line)).toEqual(lines);
  });

  it.each([
    ['cluster-east', 'v1alpha1', 'cluster-east-status.yaml'],
    ['cluster-west', 'v1alpha2', 'cluster-west.yaml'],
  ])('%s (%s) is stored with the status of the page', async (name, version, statusFile) => {
    const { controlPlane } = e2eContext();
    const got = await kubectl(controlPlane.adminKubeconfig, [
      'get',
      `clusterprofiles.${version}.multicluster.x-k8s.io`,
      name,
      '-n',
      'fleet',
      '-o',
      'json',
    ]);
    expect(got.code).toBe(0);
    const expected = parse(readFileSync(join(dir, statusFile), 'utf8')) as { status: object };
    expect(JSON.parse(got.stdout).status).toMatchObject(expected.status);
  });

  it('clusterprofile kubeconfig --name reads each version from the hub', () => {
    const rendered = ran.filter((result) => result.line.startsWith('clusterprofile kubeconfig'));
    expect(rendered).toHaveLength(2);
    const servers = rendered.map((result) => {
      const docs = parseAllDocuments(result.stdout).map(
        (doc) =>
          doc.toJS() as {
            clusters: { cluster: { server: string } }[];
            users: { user: { exec: { command: string } } }[];
          },
      );
      expect(docs).toHaveLength(1);
      expect(docs[0]!.users[0]!.user.exec.command).toBe('clusterprofile-oidc');
      return docs[0]!.clusters[0]!.cluster.server;
    });
    expect(servers).toEqual(['https://cluster-east.example.com:6443', 'https://cluster-west.example.com:6443']);
  });

  it('what the page warns about: kubectl apply alone drops the status', async () => {
    const { controlPlane } = e2eContext();
    const object = parse(readFileSync(join(dir, 'cluster-west.yaml'), 'utf8')) as { metadata: { name: string } };
    object.metadata.name = 'cluster-without-status';
    const applied = await kubectl(controlPlane.adminKubeconfig, ['apply', '-f', '-'], {
      input: JSON.stringify(object),
    });
    expect(applied.code).toBe(0);
    const got = await kubectl(controlPlane.adminKubeconfig, [
      'get',
      'clusterprofile',
      'cluster-without-status',
      '-n',
      'fleet',
      '-o',
      'json',
    ]);
    expect(JSON.parse(got.stdout).status?.accessProviders).toBeUndefined();
  });
});
