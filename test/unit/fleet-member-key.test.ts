// Which member a ClusterProfile stands for (src/fleet/member-key.ts): the v1alpha2 member-ID label when set, else the
// profile's name; what the fleet keys engagement by (test/e2e/fleet-member-id.test.ts runs it on the API server).
import { describe, expect, test } from 'vitest';
import { INVENTORY_MEMBER_ID_LABEL, duplicateMemberError, memberKeyOf } from '../../src/fleet/member-key.js';

const labelled = (labels: unknown) => ({ metadata: { name: 'p', labels } });

describe('memberKeyOf', () => {
  test('the member-ID label when it is a non-empty string', () => {
    expect(memberKeyOf(labelled({ [INVENTORY_MEMBER_ID_LABEL]: 'east-1', other: 'x' }), 'p')).toBe('east-1');
  });

  test.each([
    ['no labels', { metadata: { name: 'p' } }],
    ['an empty label', labelled({ [INVENTORY_MEMBER_ID_LABEL]: '' })],
    ['a label of another name', labelled({ 'multicluster.x-k8s.io/member-id': 'east-1' })],
    ['labels that are not an object', labelled(['east-1'])],
    ['no metadata', {}],
  ])('the profile name with %s', (_, profile) => {
    expect(memberKeyOf(profile, 'p')).toBe('p');
  });
});

test('the duplicate report names both profiles, the member, the label and its path', () => {
  const error = duplicateMemberError('fleet', 'b', 'east-1', 'a');
  expect(error).toMatchObject({
    code: 'ERR_FLEET_DUPLICATE_MEMBER',
    path: `$.metadata.labels['${INVENTORY_MEMBER_ID_LABEL}']`,
  });
  expect(error.message).toBe(
    `ClusterProfiles fleet/a and fleet/b both name inventory member "east-1" (label ${INVENTORY_MEMBER_ID_LABEL}); the member is engaged once, through a, and b is not used`,
  );
  expect(error.exitCode).toBe(1);
});
