/**
 * Global setup of the e2e project: builds (or finds in .cache/) etcd, kube-apiserver, kube-controller-manager, Dex
 * and the Go client, starts the test OpenID Provider, Dex (whose token-exchange connector trusts the test OP) and a
 * control plane whose structured authentication trusts both, and provides their facts to test files (see
 * test/helpers/controlplane-e2e.ts). Needs Go: without it this fails with the Go requirement, it never skips.
 */
import type { TestProject } from 'vitest/node';
import { ensureControlPlaneBinaries } from './controlplane/build.mjs';
import { startControlPlane, freePort, type ControlPlane } from '../helpers/controlplane.js';
import type { E2eBinaries, E2eDexInfo, E2eOidcInfo } from '../helpers/controlplane-e2e.js';
import { DEX_AUDIENCE, startDex } from '../helpers/dex.js';
import { DEFAULT_AUDIENCE, startTestOpenIdProvider } from '../helpers/oidc-op.js';

/**
 * The audience kube-apiserver's JWT authenticator accepts and the test OP issues access tokens for. The OP takes it
 * as an RFC 8707 resource indicator, which must be an absolute URI (a bare `kubernetes-e2e` is refused with
 * invalid_target), so it is the OP's default `https://kubernetes.test`.
 */
const E2E_AUDIENCE = DEFAULT_AUDIENCE;

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const log = (line: string): void => void process.stderr.write(`${line}\n`);
  const started = performance.now();
  const binaries: E2eBinaries = await ensureControlPlaneBinaries({ log });

  const cleanups: Array<() => Promise<void>> = [];
  const teardown = async (): Promise<void> => {
    for (const cleanup of cleanups.reverse())
      await cleanup().catch((error: unknown) => log(`e2e teardown: ${String(error)}`));
  };
  try {
    const op = await startTestOpenIdProvider({ port: await freePort(), audiences: [E2E_AUDIENCE] });
    cleanups.push(() => op.close());
    const oidc: E2eOidcInfo = {
      issuer: op.issuer,
      caPem: op.caPem,
      audience: E2E_AUDIENCE,
      clients: JSON.parse(JSON.stringify(op.clients)) as E2eOidcInfo['clients'],
      usernamePrefix: 'oidc:',
      groupsPrefix: 'oidc:',
      subjectTokenKey: op.subjectTokenKey,
    };

    // Dex's audience is a client ID (the peer `kubernetes` that trusts the others), not a URI.
    const dexServer = await startDex({ binary: binaries.dex, upstream: { issuer: op.issuer, caPem: op.caPem } });
    cleanups.push(() => dexServer.close());
    const { close: _close, ...dexFacts } = dexServer;
    const dex: E2eDexInfo = { ...dexFacts, audience: DEX_AUDIENCE, usernamePrefix: 'dex:', groupsPrefix: 'dex:' };

    const controlPlane: ControlPlane = await startControlPlane({
      binaries,
      jwtIssuers: [
        {
          url: op.issuer,
          caPem: op.caPem,
          audiences: [E2E_AUDIENCE],
          usernamePrefix: oidc.usernamePrefix,
          groupsPrefix: oidc.groupsPrefix,
        },
        {
          url: dex.issuer,
          caPem: dex.caPem,
          audiences: [DEX_AUDIENCE],
          usernamePrefix: dex.usernamePrefix,
          groupsPrefix: dex.groupsPrefix,
        },
      ],
      keepWorkDir: process.env.CPC_E2E_KEEP === '1',
      log,
    });
    cleanups.push(() => controlPlane.stop());
    log(
      `e2e: control plane up in ${Math.round(performance.now() - started) / 1000}s (${Object.values(binaries.versions).join(', ')})`,
    );

    const { stop: _stop, ...info } = controlPlane;
    project.provide('controlPlane', info);
    project.provide('oidc', oidc);
    project.provide('dex', dex);
    project.provide('binaries', binaries);
  } catch (error) {
    await teardown();
    throw error;
  }
  return teardown;
}
