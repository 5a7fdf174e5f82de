/**
 * A member's current credential, handed out in-process: for a consumer that authenticates its own requests (an
 * application with its own Kubernetes client, such as Backstage's Kubernetes plugin) instead of using the member's
 * client. It is the credential the member's slot holds (the one its client would send), fetched when none is held or
 * it expired, and refreshed ahead of expiry by the fleet's scheduler like every other.
 */
import { CredentialsError } from '../base/errors.js';
import type { ExecCredential } from '../exec/output.js';
import type { Member } from './members.js';

/**
 * The credential of `member` (the fleet's member named `name`): its slot's, from the slot's authenticator. Rejects
 * with `ERR_FLEET_MEMBER_UNKNOWN` when the inventory has no such profile, with the profile's resolution error when it
 * does not resolve, and with the last fetch's error while its backoff lasts.
 */
export function memberCredential(member: Member | undefined, name: string, namespace: string): Promise<ExecCredential> {
  if (member === undefined) {
    return Promise.reject(
      new CredentialsError(
        'ERR_FLEET_MEMBER_UNKNOWN',
        `the fleet's inventory (namespace ${namespace}) has no ClusterProfile ${JSON.stringify(name)}`,
        { path: `${namespace}/${name}` },
      ),
    );
  }
  if (member.slot === undefined) return Promise.reject(member.invalid);
  return member.slot.authenticator.getCredential();
}
