// Shared helpers for the test API server's tests: clients from its kubeconfig, raw
// requests, and a watch recorder over @kubernetes/client-node's Watch.
import { KubeConfig, Watch } from '@kubernetes/client-node';
import { fetch, Agent } from 'undici';
import type { FakeKubeApiServer } from '../../support/kube-apiserver/index.ts';

export function kubeConfigFor(server: FakeKubeApiServer): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromString(server.kubeconfig());
  return kc;
}

export interface RawResponse {
  status: number;
  headers: Headers;
  text: string;
  json: () => any;
}

/** A raw request with the server's token (unless `token: null`). */
export async function raw(
  server: FakeKubeApiServer,
  method: string,
  path: string,
  options: { body?: unknown; contentType?: string; token?: string | null } = {},
): Promise<RawResponse> {
  const headers: Record<string, string> = { accept: 'application/json' };
  const token = options.token === undefined ? server.token : options.token;
  if (token !== null) headers.authorization = `Bearer ${token}`;
  if (options.body !== undefined) headers['content-type'] = options.contentType ?? 'application/json';
  const dispatcher = server.caPem ? new Agent({ connect: { ca: server.caPem } }) : undefined;
  try {
    const res = await fetch(server.url + path, {
      method,
      headers,
      body: options.body === undefined ? undefined : typeof options.body === 'string' ? options.body : JSON.stringify(options.body),
      dispatcher,
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers as unknown as Headers, text, json: () => JSON.parse(text) };
  } finally {
    await dispatcher?.close();
  }
}

export interface WatchEventRecord {
  type: string;
  object: any;
}

export interface RecordedWatch {
  events: WatchEventRecord[];
  /** Resolves with the error (or null) when the stream ends. */
  ended: Promise<Error | null>;
  /** Waits until pred holds for the events so far; fails the test after ms. */
  until(pred: (events: WatchEventRecord[]) => boolean, ms?: number, what?: string): Promise<void>;
  stop(): void;
}

/** Starts a watch through client-node's Watch class and records every event. */
export async function recordWatch(kc: KubeConfig, path: string, query: Record<string, unknown>): Promise<RecordedWatch> {
  const events: WatchEventRecord[] = [];
  let resolveEnded!: (err: Error | null) => void;
  const ended = new Promise<Error | null>((resolve) => (resolveEnded = resolve));
  const controller = await new Watch(kc).watch(path, query as Record<string, string | number | boolean | undefined>, (type, object) => events.push({ type, object }), (err) => resolveEnded(err ?? null));
  return {
    events,
    ended,
    async until(pred, ms = 5000, what = 'watch events') {
      const deadline = Date.now() + ms;
      while (!pred(events)) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; got ${JSON.stringify(events.map((e) => [e.type, e.object?.metadata?.name, e.object?.metadata?.resourceVersion]))}`);
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    stop: () => controller.abort(),
  };
}

export function ingress(name: string, extra: { labels?: Record<string, string>; namespace?: string; service?: string } = {}) {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: { name, namespace: extra.namespace ?? 'default', ...(extra.labels ? { labels: extra.labels } : {}) },
    spec: { defaultBackend: { service: { name: extra.service ?? 'web', port: { number: 80 } } } },
  };
}

/** The ApiException thrown by client-node's generated clients, for assert.rejects. */
export function apiError(code: number, reason?: string) {
  return (err: any) => {
    if (err?.code !== code) return false;
    if (!reason) return true;
    const body = typeof err.body === 'string' ? JSON.parse(err.body) : err.body;
    return body?.reason === reason;
  };
}
