import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  CLUSTER_ID_MAX_LENGTH,
  CLUSTER_ID_PATTERN,
  checkClusterId,
  isClusterId,
} from '../../src/providers/tenant-cert/index.js';

const schemaDir = new URL('../../schemas/', import.meta.url);

/** Every schema object in the tenant-cert and issuer wire formats that constrains a string with the cluster-ID pattern. */
function clusterIdFields(): { where: string; schema: Record<string, unknown> }[] {
  const found: { where: string; schema: Record<string, unknown> }[] = [];
  const walk = (node: unknown, where: string): void => {
    if (node === null || typeof node !== 'object') return;
    if (!Array.isArray(node) && (node as Record<string, unknown>)['pattern'] === CLUSTER_ID_PATTERN.source)
      found.push({ where, schema: node as Record<string, unknown> });
    for (const [key, value] of Object.entries(node)) walk(value, `${where}/${key}`);
  };
  for (const file of readdirSync(schemaDir).filter((name) => /^(tenant-cert|issuer)-.*\.schema\.json$/.test(name))) {
    walk(JSON.parse(readFileSync(new URL(file, schemaDir), 'utf8')), file);
  }
  return found;
}

describe('the cluster-ID rule', () => {
  it("is a DNS-1123 label: at most 63 characters, so the CN the issuer certifies stays within X.509's 64", () => {
    expect(CLUSTER_ID_MAX_LENGTH).toBe(63);
    expect(isClusterId('a'.repeat(63))).toBe(true);
    expect(isClusterId('a'.repeat(64))).toBe(false);
    for (const good of ['a', '0', 'member-1', 'x-0-y']) expect(isClusterId(good)).toBe(true);
    for (const bad of ['', '-a', 'a-', 'A', 'a_b', 'a.b', 'a b', ' a', 'ä', 42, undefined])
      expect(isClusterId(bad)).toBe(false);
  });

  it('refuses with ERR_TENANT_CERT_FLAG naming the flag', () => {
    expect(checkClusterId('member-1', '--cluster-id')).toBe('member-1');
    expect(() => checkClusterId('a.b', '--provider-cluster-id')).toThrow(
      expect.objectContaining({
        code: 'ERR_TENANT_CERT_FLAG',
        path: '--provider-cluster-id',
        message: expect.stringContaining('at most 63 characters'),
      }),
    );
  });

  it('is what every tenant-cert and issuer document schema says about a cluster ID', () => {
    const fields = clusterIdFields();
    expect(fields.length).toBeGreaterThanOrEqual(11);
    expect(
      fields
        .filter(({ schema }) => schema['maxLength'] !== CLUSTER_ID_MAX_LENGTH || schema['minLength'] !== 1)
        .map(({ where }) => where),
    ).toEqual([]);
  });
});
