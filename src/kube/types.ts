import type { ClusterConnection } from '../base/cluster-connection.js';

/** One request to a Kubernetes API server, and its answer (conventions: protocols build these, the transport sends them). */
export interface KubeRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Path and query, relative to the API server URL. */
  path: string;
  body?: unknown;
  /** Defaults to application/json for a body. */
  contentType?: string;
  /** Streams a 2xx answer's body to this function instead of buffering it (a watch); the answer's body is then empty. */
  onChunk?: (chunk: Buffer) => void;
}

export interface KubeResponse {
  status: number;
  /** The parsed JSON body, or the raw text when it was not JSON. */
  body: unknown;
}

/** How to reach an API server: the kubeconfig Cluster fields that matter for a connection (see src/base). */
export type KubeEndpoint = ClusterConnection;

/** Who we are to that API server. */
export type KubeCredential =
  | { kind: 'token'; token: string }
  | { kind: 'certificate'; certificatePem: string; keyPem: string }
  | { kind: 'none' };

/** `timeoutMs`: this send's deadline instead of the transport's (a watch lasts longer than a request). */
export type SendKubeRequest = (
  request: KubeRequest,
  options?: { signal?: AbortSignal; timeoutMs?: number },
) => Promise<KubeResponse>;
