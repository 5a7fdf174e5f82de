/**
 * The RBAC of a fleet e2e: the hub identity may get, list and watch ClusterProfiles in the inventory namespace and
 * nothing else; the token-request bootstrap identity may mint tokens for the members' ServiceAccounts.
 */
export function fleetRbac(options: {
  inventory: string;
  accounts: string;
  hubUser: string;
  minter: string;
}): Record<string, unknown> {
  const role = (name: string, namespace: string, rules: unknown[]) => ({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name, namespace },
    rules,
  });
  const binding = (name: string, namespace: string, user: string) => ({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name, namespace },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
  });
  return {
    apiVersion: 'v1',
    kind: 'List',
    items: [
      role('fleet-reader', options.inventory, [
        { apiGroups: ['multicluster.x-k8s.io'], resources: ['clusterprofiles'], verbs: ['get', 'list', 'watch'] },
      ]),
      binding('fleet-reader', options.inventory, options.hubUser),
      role('fleet-minter', options.accounts, [
        { apiGroups: [''], resources: ['serviceaccounts/token'], verbs: ['create'] },
      ]),
      binding('fleet-minter', options.accounts, options.minter),
    ],
  };
}
