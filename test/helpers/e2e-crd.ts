/**
 * Which ClusterProfile CRD the e2e scenarios install, and which version they write profiles as. By default ours
 * (schemas/crd) and v1alpha1. The `e2e-upstream-crd` project of vitest.config.ts sets `CPC_E2E_CRD=upstream` and
 * reruns the library and fleet scenarios on upstream's own CRD instead: cluster-inventory-api v0.1.3's
 * `config/crd/bases/multicluster.x-k8s.io_clusterprofiles.yaml`, which is byte for byte the v0.1.0 file vendored in
 * test/fixtures/upstream (same sha256; see its README) and serves v1alpha1 only. `CPC_E2E_PROFILE_VERSION=v1alpha2`
 * writes profiles as v1alpha2, which only our CRD serves (the `e2e-v1alpha2` project).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = fileURLToPath(new URL('../../', import.meta.url));

/** `ours` or `upstream`. */
export const E2E_CRD: 'ours' | 'upstream' = process.env['CPC_E2E_CRD'] === 'upstream' ? 'upstream' : 'ours';

/** The CRD file the scenarios apply. */
export const clusterProfileCrdFile =
  E2E_CRD === 'upstream'
    ? path.join(repo, 'test/fixtures/upstream/cluster-inventory-api-v0.1.0/multicluster.x-k8s.io_clusterprofiles.yaml')
    : path.join(repo, 'schemas/crd/multicluster.x-k8s.io_clusterprofiles.yaml');

/** Whether the installed CRD serves v1alpha2 (upstream's v0.1.3 does not). */
export const servesV1alpha2 = E2E_CRD === 'ours';

/** The version the scenarios write ClusterProfiles as. */
export const profileVersion: 'v1alpha1' | 'v1alpha2' =
  process.env['CPC_E2E_PROFILE_VERSION'] === 'v1alpha2' && servesV1alpha2 ? 'v1alpha2' : 'v1alpha1';

/** `multicluster.x-k8s.io/<profileVersion>`. */
export const profileApiVersion = `multicluster.x-k8s.io/${profileVersion}` as const;
