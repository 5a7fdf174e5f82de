/**
 * @peculiar/x509, ready to use: its crypto provider set to node's WebCrypto, and the tiny subset of the Reflect
 * metadata API its dependency tsyringe insists on (`defineMetadata`, `getMetadata`, `getOwnMetadata`), installed only
 * when absent. Import x509 from here, never from '@peculiar/x509' directly.
 *
 * Why a shim and not the reflect-metadata package: three functions over a WeakMap, no global polyfill of the whole
 * proposal, one dependency fewer (conventions: few dependencies).
 */
import '../../base/reflect-shim.js';
import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

export { x509 };
