/**
 * Which groups (certificate O values) a consumer gets: the issuer-wide `--group` templates (`{clusterID}` replaced
 * by the consumer's ID) plus the groups recorded with `issuer trust --group`. Never a `system:` group: those mean
 * something to the API server itself (system:masters bypasses RBAC), so neither policy nor CSR may name one.
 */
import { CredentialsError } from '../base/errors.js';
import type { GrantedSubject } from '../wire/tenant-cert/protocol.js';

export function checkGroups(groups: readonly string[], path: string): string[] {
  for (const group of groups) {
    if (group.trim() === '' || group !== group.trim()) {
      throw new CredentialsError(
        'ERR_ISSUER_BAD_GROUP',
        `group ${JSON.stringify(group)} is empty or has surrounding spaces`,
        { path },
      );
    }
    if (group.toLowerCase().startsWith('system:')) {
      throw new CredentialsError(
        'ERR_ISSUER_BAD_GROUP',
        `group ${group} is reserved by Kubernetes; the issuer never grants system: groups`,
        {
          path,
          hint: 'grant permissions with RBAC bindings to a group of your own',
        },
      );
    }
  }
  return [...groups];
}

/** The subject the issuer grants a consumer: CN = its cluster ID, O = the policy's groups, de-duplicated, in order. */
export function grantedSubject(
  clusterID: string,
  policyGroups: readonly string[],
  trustGroups: readonly string[],
): GrantedSubject {
  const organizations = [
    ...new Set([...policyGroups.map((group) => group.replaceAll('{clusterID}', clusterID)), ...trustGroups]),
  ];
  return { commonName: clusterID, organizations };
}
