// The ClusterProfiles of the fleet benches (bench/fleet.bench.mjs, bench/fleet-replicas.mjs) and of
// test/e2e/fleet-sharding.test.ts, created as a cluster manager does — the object, then its status — 32 at a time. The
// benches' status: a token-request member of one ServiceAccount with its own audience (its own credential: one
// TokenRequest per member against the real API server).

/** The status of member `i`: one token-request access provider reaching `server`. */
export function benchProfileStatus(i, { server, caPem, accountNamespace }) {
  return {
    accessProviders: [
      {
        name: 'token-request',
        cluster: {
          server,
          'certificate-authority-data': Buffer.from(caPem).toString('base64'),
          extensions: [
            {
              name: 'client.authentication.k8s.io/exec',
              extension: {
                namespace: accountNamespace,
                serviceAccount: 'bench',
                audiences: [`bench-${i}`],
                expirationSeconds: 3600,
              },
            },
          ],
        },
      },
    ],
    conditions: [
      {
        type: 'ControlPlaneHealthy',
        status: 'True',
        reason: 'Probe',
        message: 'bench',
        lastTransitionTime: '2026-01-01T00:00:00Z',
      },
    ],
  };
}

/** Creates `count` profiles `c-00000`… in `namespace` through `kube` (a transport as admin); member i gets status i + offset. */
export async function createBenchProfiles(kube, namespace, count, offset, statusOf) {
  const base = `/apis/multicluster.x-k8s.io/v1alpha1/namespaces/${namespace}/clusterprofiles`;
  const one = async (i) => {
    const name = `c-${String(i).padStart(5, '0')}`;
    const created = await kube.send({
      method: 'POST',
      path: base,
      body: {
        apiVersion: 'multicluster.x-k8s.io/v1alpha1',
        kind: 'ClusterProfile',
        metadata: { name },
        spec: { displayName: name, clusterManager: { name: 'bench' } },
      },
    });
    if (created.status !== 201) throw new Error(`create ${name}: HTTP ${created.status}`);
    const patched = await kube.send({
      method: 'PATCH',
      path: `${base}/${name}/status`,
      body: { status: statusOf(offset + i) },
      contentType: 'application/merge-patch+json',
    });
    if (patched.status !== 200) throw new Error(`status ${name}: HTTP ${patched.status}`);
  };
  let next = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < count) await one(next++);
    }),
  );
}
