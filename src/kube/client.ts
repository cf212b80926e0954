// A thin Kubernetes API client over @kubernetes/client-node's KubeConfig (which does
// kubeconfig files, in-cluster config, tokens, client certificates and exec plugins)
// and undici. It returns raw JSON, as on the wire, because routing works on that shape
// and the generated clients' Date/class conversions would only cost memory and time.
// KubeConfig from its own module: the package's index loads every generated API class.
import { KubeConfig } from '@kubernetes/client-node/dist/config.js';
import { HttpMethod, RequestContext } from '@kubernetes/client-node/dist/gen/http/http.js';
import { request as undiciRequest, type Dispatcher } from 'undici';
import { JsonLines } from './json-lines.ts';
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const { existsSync } = process.getBuiltinModule('node:fs');
const { homedir } = process.getBuiltinModule('node:os');
const { join } = process.getBuiltinModule('node:path');

export class KubeApiError extends Error {
  readonly status: number;
  readonly reason: string | undefined;
  constructor(status: number, message: string, reason?: string) {
    super(message);
    this.status = status;
    this.reason = reason;
  }
}

export interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: Record<string, unknown> & { metadata?: { name?: string; namespace?: string; resourceVersion?: string } };
}

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  contentType?: string;
  signal?: AbortSignal;
}

function apiError(method: Method, path: string, status: number, text: string, body: unknown): KubeApiError {
  const parsed = typeof body === 'object' && body !== null ? (body as { message?: string; reason?: string }) : undefined;
  return new KubeApiError(status, `${method} ${path}: ${status} ${parsed?.message ?? text.slice(0, 200)}`, parsed?.reason);
}

const IN_CLUSTER_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/** In-cluster config when running in a pod, else --kubeconfig, else $KUBECONFIG / ~/.kube/config. */
export function loadKubeConfig(kubeconfigPath: string | undefined): KubeConfig {
  const kc = new KubeConfig();
  // Say which setting a file or YAML error comes from, not just the library's message.
  const from = kubeconfigPath ? `--kubeconfig ${kubeconfigPath}` : process.env.KUBECONFIG ? `$KUBECONFIG ${process.env.KUBECONFIG}` : '~/.kube/config';
  const load = (how: () => void): void => {
    try {
      how();
    } catch (err) {
      throw new Error(`${from}: cannot load the kubeconfig: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message.split('\n')[0]}`);
    }
  };
  if (kubeconfigPath) load(() => kc.loadFromFile(kubeconfigPath));
  else if (process.env.KUBERNETES_SERVICE_HOST && existsSync(IN_CLUSTER_TOKEN)) kc.loadFromCluster();
  else if (process.env.KUBECONFIG || existsSync(join(homedir(), '.kube', 'config'))) load(() => kc.loadFromDefault());
  else {
    // client-node would fall back to http://localhost:8080; say what is missing instead.
    throw new Error('no Kubernetes API configured: not in a pod, no --kubeconfig, no $KUBECONFIG, no ~/.kube/config (use --manifests DIR for standalone mode)');
  }
  if (!kc.getCurrentCluster()) {
    throw new Error(
      kubeconfigPath
        ? `--kubeconfig ${kubeconfigPath}: no current cluster in this kubeconfig`
        : 'no current cluster in $KUBECONFIG or ~/.kube/config',
    );
  }
  return kc;
}

export class KubeClient {
  readonly server: string;
  private readonly kc: KubeConfig;
  private dispatcher: Dispatcher | undefined;

  constructor(kc: KubeConfig) {
    this.kc = kc;
    this.server = kc.getCurrentCluster()!.server.replace(/\/+$/, '');
  }

  /** Headers are computed per request (tokens rotate); the TLS dispatcher is made once and reused. */
  private async prepare(url: string, method: string): Promise<{ headers: Record<string, string>; dispatcher: Dispatcher | undefined }> {
    const ctx = new RequestContext(url, method as HttpMethod);
    await this.kc.applySecurityAuthentication(ctx);
    this.dispatcher ??= ctx.getDispatcher() as Dispatcher | undefined;
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(ctx.getHeaders())) headers[k] = String(v);
    return { headers, dispatcher: this.dispatcher };
  }

  private url(path: string, query?: Record<string, string | number | boolean | undefined>): string {
    const url = new URL(this.server + path);
    if (query) for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '') url.searchParams.set(k, String(v));
    return url.toString();
  }

  /** One request; resolves with the parsed body, throws KubeApiError for a non-2xx answer. */
  async request<T = unknown>(method: Method, path: string, options: RequestOptions = {}): Promise<T> {
    const res = await this.send(method, path, options);
    const text = await res.body.text();
    let body: unknown = undefined;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = text;
    }
    if (res.statusCode < 200 || res.statusCode > 299) throw apiError(method, path, res.statusCode, text, body);
    return body as T;
  }

  /**
   * A write whose answer is not needed (a status PATCH, an Event): the body of a success
   * is read off the connection and dropped, not decoded or parsed. At 10,000 Ingresses the
   * leader's first status pass gets back 10,000 whole Ingresses.
   */
  async write(method: Exclude<Method, 'GET'>, path: string, options: RequestOptions = {}): Promise<void> {
    const res = await this.send(method, path, options);
    if (res.statusCode >= 200 && res.statusCode <= 299) {
      await res.body.dump();
      return;
    }
    const text = await res.body.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      /* not a Status */
    }
    throw apiError(method, path, res.statusCode, text, body);
  }

  /** undici's request rather than fetch: a Node stream for the body, none of fetch's Request, Response and web streams per call. */
  private async send(method: Method, path: string, options: RequestOptions): Promise<Dispatcher.ResponseData> {
    const url = this.url(path, options.query);
    const { headers, dispatcher } = await this.prepare(url, method);
    headers.accept = 'application/json';
    if (options.body !== undefined) headers['content-type'] = options.contentType ?? 'application/json';
    return undiciRequest(url, {
      method,
      headers,
      ...(dispatcher !== undefined ? { dispatcher } : {}),
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      signal: options.signal ?? AbortSignal.timeout(30_000),
    });
  }

  /**
   * Streams a watch; calls onEvent per event. Resolves when the server ends the stream,
   * rejects on a connection error or a non-200 answer. Abort with the signal.
   */
  async watch(
    path: string,
    query: Record<string, string | number | boolean | undefined>,
    onEvent: (event: WatchEvent) => void,
    signal: AbortSignal,
  ): Promise<void> {
    const url = this.url(path, { ...query, watch: 'true' });
    const { headers, dispatcher } = await this.prepare(url, 'GET');
    headers.accept = 'application/json';
    const res = await undiciRequest(url, { method: 'GET', headers, ...(dispatcher !== undefined ? { dispatcher } : {}), signal });
    if (res.statusCode !== 200) {
      const text = await res.body.text().catch(() => '');
      let reason: string | undefined;
      try {
        reason = (JSON.parse(text) as { reason?: string }).reason;
      } catch {
        /* not a Status */
      }
      throw new KubeApiError(res.statusCode, `watch ${path}: ${res.statusCode} ${text.slice(0, 200)}`, reason);
    }
    const lines = new JsonLines((line) => onEvent(line as WatchEvent));
    for await (const chunk of res.body) lines.push(chunk as Buffer);
    lines.end();
  }
}
