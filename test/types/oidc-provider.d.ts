// oidc-provider (panva) ships JavaScript without type declarations; the test OpenID Provider (test/helpers/oidc-op.ts)
// uses its documented API. Loosely typed on purpose: a test dependency, not part of our API.
declare module 'oidc-provider' {
  type Configuration = Record<string, any>;
  const Provider: { new (issuer: string, configuration?: Configuration): any; [key: string]: any };
  export default Provider;
  export const errors: any;
}
