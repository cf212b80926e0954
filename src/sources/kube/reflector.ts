// List-then-watch for one kind, keeping the ObjectStore equal to the API server's state:
// - the watch resumes from the last resourceVersion seen (events or bookmarks);
// - a 410 Gone (history compacted) re-lists and reconciles with replaceAll, so no
//   change is lost and none is applied twice;
// - connection errors reconnect with jittered exponential backoff;
// - a periodic re-list corrects any drift.
// While the API server is unreachable the store keeps its last state, so the proxy
// keeps serving the last good route table.
import type { Logger } from 'pino';
import type { KubeObject, RoutingKind } from '../../model/k8s.ts';
import type { KubeClient, WatchEvent } from '../../kube/client.ts';
import { KubeApiError } from '../../kube/client.ts';
import { collectionPath, type ResourceInfo } from '../../kube/resources.ts';
import { describeApiError as describe, type ApiOutageLog } from '../../kube/api-outage-log.ts';

/** What a reflector needs from the store; sanitize() turns wire JSON into what the store keeps. */
export interface ReflectorSink<K extends string = RoutingKind> {
  replaceAll(kind: K, objects: KubeObject[]): void;
  upsert(object: KubeObject): void;
  delete(kind: K, key: string): void;
}

export interface ReflectorOptions<K extends string = RoutingKind> {
  client: KubeClient;
  resource: ResourceInfo<K>;
  sink: ReflectorSink<K>;
  sanitize: (raw: unknown) => KubeObject | undefined;
  log: Logger;
  namespace?: string;
  /** ms between full re-lists */
  resyncMs: number;
  /** Connection state changes (for the metric and logs). */
  onConnected?: (connected: boolean) => void;
  /**
   * Where failures and recoveries are told, to be logged once per outage for every kind;
   * each retry is then logged at debug level only. Without it each failure is a warning.
   */
  outage?: ApiOutageLog;
  pageSize?: number;
  /** Backoff bounds in ms. */
  minBackoffMs?: number;
  maxBackoffMs?: number;
}

interface ListResponse {
  metadata?: { resourceVersion?: string; continue?: string };
  items?: unknown[];
}

class GoneError extends Error {}

export class Reflector<K extends string = RoutingKind> {
  private readonly o: ReflectorOptions<K>;
  private resourceVersion = '';
  private abort = new AbortController();
  private stopped = false;
  private lastList = 0;
  private failures = 0;
  private resolveSynced!: () => void;
  /** Resolves after the first successful list. */
  readonly synced: Promise<void>;

  constructor(options: ReflectorOptions<K>) {
    this.o = options;
    this.synced = new Promise((resolve) => (this.resolveSynced = resolve));
  }

  start(): void {
    void this.run();
  }

  stop(): void {
    this.stopped = true;
    this.abort.abort();
  }

  get kind(): K {
    return this.o.resource.kind;
  }

  private async run(): Promise<void> {
    const { log, resource } = this.o;
    while (!this.stopped) {
      try {
        if (!this.resourceVersion || Date.now() - this.lastList >= this.o.resyncMs) await this.list();
        this.setConnected(true);
        await this.watch();
        // The server ended the watch (timeoutSeconds): resume from where we are.
      } catch (err) {
        if (this.stopped) return;
        if (err instanceof GoneError) {
          log.info({ kind: resource.kind }, 'watch history expired (410 Gone); re-listing');
          this.resourceVersion = '';
          continue;
        }
        this.setConnected(false);
        const delay = this.backoff();
        // Name the server and the cause ("fetch failed" alone says nothing), and say what is served meanwhile.
        const served = this.lastList > 0 ? 'serving the last known state' : `no ${resource.kind} is known yet`;
        const cause = describe(err);
        this.o.outage?.failed(resource.kind, cause);
        log[this.o.outage ? 'debug' : 'warn'](
          { kind: resource.kind, server: this.o.client.server, err: cause, retryInMs: delay },
          `cannot list or watch ${resource.kind} at the Kubernetes API ${this.o.client.server}: ${cause}; ${served}; retrying in ${delay} ms`,
        );
        await sleep(delay, this.abort.signal);
      }
    }
  }

  private setConnected(connected: boolean): void {
    if (connected) {
      this.failures = 0;
      this.o.outage?.succeeded(this.o.resource.kind);
    }
    this.o.onConnected?.(connected);
  }

  /** Full jitter: a random delay up to an exponentially growing cap. */
  private backoff(): number {
    const min = this.o.minBackoffMs ?? 200;
    const max = this.o.maxBackoffMs ?? 30_000;
    const cap = Math.min(max, min * 2 ** this.failures++);
    return Math.round(min + Math.random() * (cap - min));
  }

  private async list(): Promise<void> {
    const { client, resource, namespace } = this.o;
    const path = collectionPath(resource, namespace);
    const objects: KubeObject[] = [];
    let cont: string | undefined;
    let rv = '';
    do {
      let page: ListResponse;
      try {
        page = await client.request<ListResponse>('GET', path, {
          query: { limit: this.o.pageSize ?? 500, continue: cont, fieldSelector: resource.fieldSelector },
          signal: AbortSignal.any([this.abort.signal, AbortSignal.timeout(60_000)]),
        });
      } catch (err) {
        // The continue token expired mid-list: start the list again.
        if (err instanceof KubeApiError && err.status === 410 && cont) {
          objects.length = 0;
          cont = undefined;
          continue;
        }
        throw err;
      }
      for (const raw of page.items ?? []) {
        const obj = this.o.sanitize(withKind(raw, resource));
        if (obj) objects.push(obj);
      }
      rv = page.metadata?.resourceVersion ?? rv;
      cont = page.metadata?.continue || undefined;
    } while (cont);
    this.o.sink.replaceAll(resource.kind, objects);
    this.resourceVersion = rv;
    this.lastList = Date.now();
    this.resolveSynced();
  }

  private async watch(): Promise<void> {
    const { client, resource, namespace } = this.o;
    // The server closes the watch after timeoutSeconds; stay under the resync period so a re-list happens on time.
    const untilResync = Math.max(1, Math.floor((this.lastList + this.o.resyncMs - Date.now()) / 1000));
    const timeoutSeconds = Math.min(untilResync, 300 + Math.floor(Math.random() * 300));
    const watchAbort = new AbortController();
    const signal = AbortSignal.any([this.abort.signal, watchAbort.signal]);
    let gone = false;
    await client.watch(
      collectionPath(resource, namespace),
      { resourceVersion: this.resourceVersion, allowWatchBookmarks: true, timeoutSeconds, fieldSelector: resource.fieldSelector },
      (event) => {
        if (gone) return;
        if (this.apply(event) === 'gone') {
          gone = true;
          watchAbort.abort();
        }
      },
      signal,
    ).catch((err: unknown) => {
      if (!gone) throw err;
    });
    if (gone) throw new GoneError();
  }

  private apply(event: WatchEvent): 'ok' | 'gone' {
    const { resource, sink, sanitize, log } = this.o;
    const rv = event.object?.metadata?.resourceVersion;
    switch (event.type) {
      case 'ADDED':
      case 'MODIFIED': {
        const obj = sanitize(withKind(event.object, resource));
        if (obj) sink.upsert(obj);
        break;
      }
      case 'DELETED': {
        const meta = event.object.metadata ?? {};
        if (meta.name) sink.delete(resource.kind, meta.namespace ? `${meta.namespace}/${meta.name}` : meta.name);
        break;
      }
      case 'BOOKMARK':
        break;
      case 'ERROR': {
        const status = event.object as { code?: number; message?: string };
        if (status.code === 410) return 'gone';
        log.warn({ kind: resource.kind, status }, 'watch error event');
        throw new KubeApiError(status.code ?? 500, status.message ?? 'watch error');
      }
    }
    if (rv) this.resourceVersion = rv;
    return 'ok';
  }
}

/** List items come without apiVersion/kind; put them back so sanitize recognizes the kind. */
function withKind(raw: unknown, resource: ResourceInfo<string>): unknown {
  if (!raw || typeof raw !== 'object') return raw;
  const obj = raw as { apiVersion?: string; kind?: string };
  if (obj.kind && obj.apiVersion) return raw;
  const apiVersion = resource.base === '/api/v1' ? 'v1' : resource.base.slice('/apis/'.length);
  return { ...obj, apiVersion, kind: resource.kind };
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done);
  });
}
