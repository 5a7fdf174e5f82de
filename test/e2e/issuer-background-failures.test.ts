/**
 * A failure no request sees, on the real control plane: an issuer replica (`clusterprofile issuer serve --state
 * kubernetes --log-format json`, our built bin) whose Role is the shipped one without `delete` on ConfigMaps cannot
 * collect an expired spent-nonce record. The 403 shows in its JSON log (an `error` line naming the loop) and in
 * `/metrics` (`clusterprofile_issuer_background_failures_total{loop="nonce-collection"}`), and the record stays.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LABEL_EXPIRES, LABEL_EXPIRES_MINUTE } from '../../src/issuer/state/kubernetes/nonce-book.js';
import { LABEL_KIND } from '../../src/issuer/state/kubernetes/objects.js';
import { tokenKubeconfig } from '../helpers/controlplane-e2e.js';
import { startIssuerProcess, type IssuerProcess } from '../helpers/issuer-process.js';
import { adminKubectl, templatedManifest } from './fixtures/tenant-cert-issuer.js';

const NS = 'issuer-background';
const RECORD = 'issuer-spent-expired-by-hand';
let saKubeconfig: string;
let issuer: IssuerProcess | undefined;

beforeAll(async () => {
  await adminKubectl(['create', 'namespace', NS]);
  const shipped = await templatedManifest('deploy/base/issuer-state-rbac.yaml', [['clusterprofile-system', NS]]);
  const withoutDelete = shipped.replace(
    'verbs: ["get", "list", "create", "delete"]',
    'verbs: ["get", "list", "create"]',
  );
  expect(withoutDelete).not.toBe(shipped);
  await adminKubectl(['apply', '-f', '-'], withoutDelete);
  const token = (await adminKubectl(['-n', NS, 'create', 'token', 'clusterprofile-issuer', '--duration', '1h'])).trim();
  saKubeconfig = await tokenKubeconfig('issuer-background', token);
  // A spent-nonce record that expired two minutes ago, as a replica writes one.
  const expiredAt = Date.now() - 120_000;
  await adminKubectl(
    ['apply', '-f', '-'],
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: RECORD,
        namespace: NS,
        labels: {
          [LABEL_KIND]: 'nonce',
          [LABEL_EXPIRES]: String(Math.ceil(expiredAt / 1000)),
          [LABEL_EXPIRES_MINUTE]: String(Math.ceil(expiredAt / 60_000)),
        },
      },
    }),
  );
}, 120_000);

afterAll(async () => {
  await issuer?.stop();
  await adminKubectl(['delete', 'namespace', NS, '--wait=false']).catch(() => undefined);
});

describe('issuer serve --log-format json, a Role without delete on ConfigMaps', () => {
  it('logs the 403 of the nonce collection as a JSON error line and counts it in /metrics', async () => {
    issuer = await startIssuerProcess([
      '--state',
      'kubernetes',
      '--namespace',
      NS,
      '--kubeconfig',
      saKubeconfig,
      '--listen',
      '127.0.0.1:0',
      '--cluster-id',
      'provider-background',
      '--log-format',
      'json',
      '--nonce-collection-interval',
      '1s',
      '--metrics-listen',
      '127.0.0.1:0',
    ]);
    const running = issuer;
    const lines = () =>
      running
        .log()
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as { level: string; msg: string });
    await expect
      .poll(() => lines().find((line) => line.msg.startsWith('background nonce-collection failed')), {
        timeout: 30_000,
        interval: 250,
      })
      .toBeDefined();
    const failure = lines().find((line) => line.msg.startsWith('background nonce-collection failed'))!;
    expect(failure.level).toBe('error');
    expect(failure.msg).toMatch(/403|forbidden/i);

    const metricsUrl = /metrics on (http:\/\/127\.0\.0\.1:\d+)\/metrics/.exec(running.log())?.[1];
    expect(metricsUrl, running.log()).toBeDefined();
    const metrics = await (await fetch(`${metricsUrl}/metrics`)).text();
    const failures = Number(
      /^clusterprofile_issuer_background_failures_total\{loop="nonce-collection"\} (\d+)$/m.exec(metrics)?.[1],
    );
    expect(failures).toBeGreaterThanOrEqual(1);
    // Nothing was collected: the record is still there.
    expect(await adminKubectl(['-n', NS, 'get', 'configmap', RECORD, '-o', 'name'])).toBe(`configmap/${RECORD}\n`);
  }, 90_000);
});
