// Watch streams: newline-delimited JSON events over a chunked 200 response, as the real
// server sends them. A watch starts from a resourceVersion (replaying the retained
// history after it) or from "now" (synthetic ADDED for the current state), then follows
// the store's events live. Selector-filtered watches turn "stopped matching" into DELETED
// and "started matching" into ADDED, as the watch cache does.
import type { ServerResponse } from 'node:http';
import { groupVersion, resourceId, type ResourceKind } from './kinds.ts';
import type { Matcher } from './selectors.ts';
import { errors } from './status.ts';
import type { KubeObj, Store, StoreEvent } from './store.ts';

export interface WatchRequest {
  resource: ResourceKind;
  /** Only this namespace (namespaced resources); all when absent. */
  namespace?: string;
  matches: Matcher;
  /** '' or '0' start from now; a number resumes after it. */
  resourceVersion: string;
  allowBookmarks: boolean;
  /** Streaming list (sendInitialEvents=true): current state first, then a BOOKMARK marking its end. */
  sendInitialEvents: boolean;
  timeoutMs: number;
}

interface WireEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: unknown;
}

class ActiveWatch {
  readonly res: ServerResponse;
  private readonly request: WatchRequest;
  private readonly id: string;
  private readonly timers: NodeJS.Timeout[] = [];
  private unsubscribe: (() => void) | undefined;
  private closed = false;
  private readonly onClosed: (w: ActiveWatch) => void;

  constructor(res: ServerResponse, request: WatchRequest, onClosed: (w: ActiveWatch) => void) {
    this.res = res;
    this.request = request;
    this.id = resourceId(request.resource);
    this.onClosed = onClosed;
  }

  private inScope(obj: KubeObj): boolean {
    const { resource, namespace, matches } = this.request;
    if (resource.namespaced && namespace && obj.metadata.namespace !== namespace) return false;
    return matches(obj);
  }

  /** What a store event looks like to this watcher, if anything. */
  convert(event: StoreEvent): WireEvent | undefined {
    if (resourceId(event.resource) !== this.id) return undefined;
    const prevIn = event.prev ? this.inScope(event.prev) : false;
    if (event.type === 'DELETED') return prevIn ? { type: 'DELETED', object: event.object } : undefined;
    const curIn = this.inScope(event.object);
    if (curIn) return { type: prevIn ? 'MODIFIED' : 'ADDED', object: event.object };
    if (prevIn) {
      // The previous content, at the resourceVersion of the write that moved it out of scope.
      const prev = event.prev!;
      return { type: 'DELETED', object: { ...prev, metadata: { ...prev.metadata, resourceVersion: String(event.rv) } } };
    }
    return undefined;
  }

  send(event: WireEvent): void {
    if (!this.closed) this.res.write(`${JSON.stringify(event)}\n`);
  }

  bookmark(store: Store, annotations?: Record<string, string>): void {
    const { resource } = this.request;
    const metadata: Record<string, unknown> = { resourceVersion: String(store.resourceVersion) };
    if (annotations) metadata.annotations = annotations;
    this.send({ type: 'BOOKMARK', object: { kind: resource.kind, apiVersion: groupVersion(resource), metadata } });
  }

  follow(store: Store, bookmarkIntervalMs: number): void {
    this.unsubscribe = store.subscribe((event) => {
      const wire = this.convert(event);
      if (wire) this.send(wire);
    });
    if (this.request.allowBookmarks) this.timers.push(setInterval(() => this.bookmark(store), bookmarkIntervalMs).unref());
    // The real server ends every watch after its timeout; the client resumes from its last resourceVersion.
    this.timers.push(setTimeout(() => this.end(), this.request.timeoutMs).unref());
    this.res.on('close', () => this.cleanup());
  }

  /** A clean end of the stream (timeout, server stop). */
  end(): void {
    if (this.closed) return;
    this.cleanup();
    this.res.end();
  }

  /** An abrupt end: the connection is reset mid-stream. */
  drop(): void {
    if (this.closed) return;
    this.cleanup();
    this.res.socket?.destroy();
    this.res.destroy();
  }

  private cleanup(): void {
    if (this.closed) return;
    this.closed = true;
    this.unsubscribe?.();
    for (const t of this.timers) clearTimeout(t);
    this.onClosed(this);
  }
}

export class WatchHub {
  private readonly store: Store;
  private readonly bookmarkIntervalMs: number;
  private readonly active = new Set<ActiveWatch>();

  constructor(store: Store, bookmarkIntervalMs: number) {
    this.store = store;
    this.bookmarkIntervalMs = bookmarkIntervalMs;
  }

  get count(): number {
    return this.active.size;
  }

  /**
   * Starts a watch on res. Request errors (bad or too large resourceVersion) throw an
   * ApiError before anything is written; an expired resourceVersion is, as on the real
   * server, a 200 stream holding one ERROR event.
   */
  start(res: ServerResponse, request: WatchRequest): void {
    const { store } = this;
    let from: number | undefined;
    if (request.resourceVersion !== '' && request.resourceVersion !== '0') {
      if (!/^\d+$/.test(request.resourceVersion)) throw errors.badRequest(`invalid resource version: ${JSON.stringify(request.resourceVersion)}`);
      from = Number(request.resourceVersion);
      if (from > store.resourceVersion) throw errors.tooLargeResourceVersion(from, store.resourceVersion);
    }

    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-cache, private' });
    res.flushHeaders();
    const watch = new ActiveWatch(res, request, (w) => this.active.delete(w));
    this.active.add(watch);

    // Everything below runs in one tick with the subscription, so no write can slip between.
    if (request.sendInitialEvents || from === undefined) {
      for (const [, obj] of store.list(request.resource)) {
        const wire = watch.convert({ rv: store.resourceVersion, type: 'ADDED', resource: request.resource, key: '', object: obj });
        if (wire) watch.send(wire);
      }
      if (request.sendInitialEvents) watch.bookmark(store, { 'k8s.io/initial-events-end': 'true' });
    } else {
      let replay: StoreEvent[];
      try {
        replay = store.eventsAfter(from);
      } catch (err) {
        const status = (err as { toStatus?: () => unknown }).toStatus?.();
        if (!status) throw err;
        watch.send({ type: 'ERROR', object: status });
        watch.end();
        return;
      }
      for (const event of replay) {
        const wire = watch.convert(event);
        if (wire) watch.send(wire);
      }
    }
    watch.follow(store, this.bookmarkIntervalMs);
  }

  /** Resets every watch connection (a network fault or a server crash, as clients see it). */
  dropAll(): number {
    const watches = [...this.active];
    for (const w of watches) w.drop();
    return watches.length;
  }

  /** Ends every watch cleanly (server shutdown). */
  endAll(): void {
    for (const w of [...this.active]) w.end();
  }
}
