/**
 * The `clusterprofile` auth strategy: each request of Backstage's Kubernetes plugin to a member cluster is
 * authenticated with that member's credential, taken from the fleet in-process (a bearer token, or a client
 * certificate and key) and refreshed by the fleet ahead of expiry. A member whose credential cannot be had gets a
 * placeholder token that no API server accepts, so that Backstage reports that cluster's request as unauthorized
 * (an error for that cluster only: an exception here would fail the whole request, every cluster's answer with it);
 * the reason is logged once per change, with its code, never with a credential.
 */
import type { LoggerService } from '@backstage/backend-plugin-api';
import type { AuthenticationStrategy, ClusterDetails, KubernetesCredential } from '@backstage/plugin-kubernetes-node';
import { formatError, type ClusterProfileFleet } from 'clusterprofile-credentials';

/** What a member without a credential is sent with: not a credential, refused by every API server (401). */
export const UNAVAILABLE_TOKEN = 'clusterprofile-credential-unavailable';

/** An {@link AuthenticationStrategy} handing out the fleet's credentials. */
export class ClusterProfileAuthStrategy implements AuthenticationStrategy {
  readonly #fleet: ClusterProfileFleet;
  readonly #logger: LoggerService;
  /** The last failure logged per member, so that a member failing on every request is logged once. */
  readonly #reported = new Map<string, string>();

  constructor(fleet: ClusterProfileFleet, logger: LoggerService) {
    this.#fleet = fleet;
    this.#logger = logger;
  }

  async getCredential(clusterDetails: ClusterDetails): Promise<KubernetesCredential> {
    const name = clusterDetails.name;
    try {
      const credential = await this.#fleet.credential(name);
      this.#reported.delete(name);
      if (credential.clientCertificate !== undefined && credential.clientKey !== undefined) {
        return { type: 'x509 client certificate', cert: credential.clientCertificate, key: credential.clientKey };
      }
      if (credential.token !== undefined) return { type: 'bearer token', token: credential.token };
      this.#report(name, 'the credential holds neither a token nor a client certificate');
    } catch (error) {
      this.#report(name, formatError(error));
    }
    return { type: 'bearer token', token: UNAVAILABLE_TOKEN };
  }

  validateCluster(): Error[] {
    return [];
  }

  /** Nothing of the credential reaches the browser. */
  presentAuthMetadata(): Record<string, string> {
    return {};
  }

  #report(name: string, reason: string): void {
    if (this.#reported.get(name) === reason) return;
    this.#reported.set(name, reason);
    this.#logger.warn(`ClusterProfile ${this.#fleet.namespace}/${name}: no credential for Backstage: ${reason}`);
  }
}
