/**
 * The one ClusterProfile file reader: a single profile or a List, v1alpha1 and v1alpha2, checked against the schemas.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { readClusterProfileFile } from '../../src/kube/cluster-profile.js';
import { buildProfile } from '../helpers/library-fixtures.js';
import { rejection } from '../helpers/errors.js';

const dir = mkdtempSync(join(tmpdir(), 'kube-cluster-profile-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, content: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, typeof content === 'string' ? content : stringify(content));
  return path;
}

function v1alpha2(name: string) {
  return {
    apiVersion: 'multicluster.x-k8s.io/v1alpha2',
    kind: 'ClusterProfile',
    metadata: { name, namespace: 'fleet' },
    spec: { clusterManager: { name: 'demo' } },
    status: { accessProviders: [{ name: 'p', cluster: { server: 'https://spoke.example' } }] },
  };
}

describe('readClusterProfileFile', () => {
  it('reads one profile (YAML or JSON), v1alpha1 or v1alpha2', async () => {
    expect(await readClusterProfileFile(file('one.yaml', buildProfile()))).toEqual([buildProfile()]);
    expect(await readClusterProfileFile(file('two.json', JSON.stringify(v1alpha2('spoke-2'))))).toEqual([
      v1alpha2('spoke-2'),
    ]);
  });

  it('reads every item of a List, as kubectl get -o yaml writes it', async () => {
    const list = { apiVersion: 'v1', kind: 'List', items: [buildProfile(), v1alpha2('spoke-2')] };
    const profiles = await readClusterProfileFile(file('list.yaml', list));
    expect(profiles.map((profile) => [profile.apiVersion, profile.metadata.name])).toEqual([
      ['multicluster.x-k8s.io/v1alpha1', buildProfile().metadata.name],
      ['multicluster.x-k8s.io/v1alpha2', 'spoke-2'],
    ]);
    expect(
      await readClusterProfileFile(file('empty-list.yaml', { apiVersion: 'v1', kind: 'List', items: [] })),
    ).toEqual([]);
  });

  it('a list item that breaks its schema is ERR_PROFILE_INVALID with the JSON path into the list', async () => {
    const broken = v1alpha2('spoke-3') as Record<string, any>;
    delete broken['spec'].clusterManager;
    const error = await rejection(
      readClusterProfileFile(
        file('bad-list.yaml', { apiVersion: 'v1', kind: 'List', items: [buildProfile(), broken] }),
      ),
    );
    expect(error.code).toBe('ERR_PROFILE_INVALID');
    expect(error.path).toBe('$.items[1].spec.clusterManager');
    expect(error.message).toContain(join(dir, 'bad-list.yaml'));
  });

  it('v1alpha2 has no credentialProviders', async () => {
    const profile = {
      ...v1alpha2('spoke-4'),
      status: { credentialProviders: [{ name: 'p', cluster: { server: 'https://x' } }] },
    };
    const error = await rejection(readClusterProfileFile(file('v2-old-field.yaml', profile)));
    expect(error.code).toBe('ERR_PROFILE_INVALID');
    expect(error.path).toBe('$.status.credentialProviders');
  });

  it('an extension payload of any shape is left to the extension readers', async () => {
    const profile = buildProfile();
    profile.status!.accessProviders![0]!.cluster!.extensions![0]!.extension = 'a string';
    expect(await readClusterProfileFile(file('extension.yaml', profile))).toHaveLength(1);
  });

  it('unreadable, not YAML, not an object, not a ClusterProfile: coded errors naming the file', async () => {
    const missing = await rejection(readClusterProfileFile(join(dir, 'absent.yaml')));
    expect([missing.code, missing.message]).toEqual([
      'ERR_PROFILE_READ',
      `cannot read ClusterProfile file ${join(dir, 'absent.yaml')}: no such file`,
    ]);
    const yaml = await rejection(readClusterProfileFile(file('broken.yaml', 'a: [\n')));
    expect(yaml.code).toBe('ERR_PROFILE_PARSE');
    const scalar = await rejection(readClusterProfileFile(file('scalar.yaml', '42\n')));
    expect([scalar.code, scalar.path]).toEqual(['ERR_PROFILE_PARSE', join(dir, 'scalar.yaml')]);
    const pod = await rejection(
      readClusterProfileFile(file('pod.yaml', { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'x' } })),
    );
    expect([pod.code, pod.path]).toEqual(['ERR_PROFILE_INVALID', '$.apiVersion']);
  });
});
