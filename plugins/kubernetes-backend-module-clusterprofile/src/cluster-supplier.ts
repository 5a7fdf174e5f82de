/**
 * The clusters Backstage's Kubernetes plugin shows: every member of the fleet whose profile resolves, read from the
 * fleet on each call (Backstage asks for them on every request and on `/clusters`), so that a profile added, changed or
 * deleted on the hub shows up without a restart. Each cluster is named by its ClusterProfile's name (stable: the
 * profile's name does not change), reached at its profile's server with its CA, and authenticated by this module's
 * auth strategy ({@link CLUSTERPROFILE_AUTH_PROVIDER}); nothing in it is a credential.
 */
import { ANNOTATION_KUBERNETES_AUTH_PROVIDER } from '@backstage/plugin-kubernetes-common';
import type { ClusterDetails, KubernetesClustersSupplier } from '@backstage/plugin-kubernetes-node';
import type { ClusterProfileFleet, FleetMember } from 'clusterprofile-credentials';

/** The `authProvider` of this module's clusters (Backstage's `kubernetes.io/auth-provider`). */
export const CLUSTERPROFILE_AUTH_PROVIDER = 'clusterprofile';

/** A member as Backstage's cluster details; undefined for a member whose profile does not resolve. */
export function clusterDetailsOf(member: FleetMember): ClusterDetails | undefined {
  const access = member.access;
  if (access === undefined) return undefined;
  const cluster = access.cluster;
  return {
    name: member.name,
    url: cluster.server,
    authMetadata: { [ANNOTATION_KUBERNETES_AUTH_PROVIDER]: CLUSTERPROFILE_AUTH_PROVIDER },
    // Resolution has already refused a profile that turns verification off unless its provider allows it.
    ...(cluster['insecure-skip-tls-verify'] === true ? { skipTLSVerify: true } : {}),
    ...(cluster['certificate-authority-data'] === undefined ? {} : { caData: cluster['certificate-authority-data'] }),
  };
}

/** A {@link KubernetesClustersSupplier} over one fleet. */
export class ClusterProfileClusterSupplier implements KubernetesClustersSupplier {
  readonly #fleet: ClusterProfileFleet;
  readonly #requireHealthy: boolean;

  constructor(fleet: ClusterProfileFleet, options: { requireHealthy: boolean }) {
    this.#fleet = fleet;
    this.#requireHealthy = options.requireHealthy;
  }

  /**
   * Every member that resolves, in name order; with `requireHealthy`, only those whose ControlPlaneHealthy is True.
   * A member whose credential fails is listed (its requests show Backstage's error for that cluster).
   */
  async getClusters(): Promise<ClusterDetails[]> {
    const clusters: ClusterDetails[] = [];
    for (const member of this.#fleet.list()) {
      if (this.#requireHealthy && member.healthy !== true) continue;
      const details = clusterDetailsOf(member);
      if (details !== undefined) clusters.push(details);
    }
    return clusters;
  }
}
