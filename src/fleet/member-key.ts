/**
 * Which member of the inventory a ClusterProfile stands for. cluster-inventory-api v1alpha2 labels each profile with
 * `multicluster.x-k8s.io/inventory-member-id` (Open Cluster Management sets it), and KEP-4322 makes one namespace one
 * inventory: two profiles with one member ID in a namespace are one member, which the fleet engages once
 * (./members.ts reports the second with `ERR_FLEET_DUPLICATE_MEMBER`). Without the label a profile is its own member,
 * keyed by its name, as before. Everything that keys the fleet's members (engagement, sharding) asks {@link memberKeyOf}.
 */
import { CredentialsError } from '../base/errors.js';
import { isRecord } from '../base/record.js';

/** The v1alpha2 label naming the inventory member a ClusterProfile describes. */
export const INVENTORY_MEMBER_ID_LABEL = 'multicluster.x-k8s.io/inventory-member-id';

/** The member a profile stands for: its member-ID label when set (non-empty), else its name. */
export function memberKeyOf(profile: unknown, name: string): string {
  const metadata = isRecord(profile) ? profile['metadata'] : undefined;
  const labels = isRecord(metadata) ? metadata['labels'] : undefined;
  const id = isRecord(labels) ? labels[INVENTORY_MEMBER_ID_LABEL] : undefined;
  return typeof id === 'string' && id !== '' ? id : name;
}

/** The report for a profile whose member ID another profile of the inventory already holds. */
export function duplicateMemberError(namespace: string, name: string, key: string, holder: string): CredentialsError {
  return new CredentialsError(
    'ERR_FLEET_DUPLICATE_MEMBER',
    `ClusterProfiles ${namespace}/${holder} and ${namespace}/${name} both name inventory member ${JSON.stringify(key)} ` +
      `(label ${INVENTORY_MEMBER_ID_LABEL}); the member is engaged once, through ${holder}, and ${name} is not used`,
    {
      path: `$.metadata.labels['${INVENTORY_MEMBER_ID_LABEL}']`,
      hint: `give each ClusterProfile of namespace ${namespace} its own member ID, or delete one of the two`,
    },
  );
}
