// The ports Gateway listeners ask for, bound and released live as the routing config
// changes: a new port is bound, a removed one drained and closed, an HTTPS port gets
// its certificates swapped; ports that did not change are never touched, so their
// connections and requests carry on. A port that cannot be bound is remembered (it
// shows in /routes and the Gateway's status) and tried again on the next change.
import type { Logger } from 'pino';
import type { ListenerConfig } from '../model/config.ts';
import type { CertificateStore } from '../tls/certificates.ts';
import type { ProxyServer } from './server.ts';

/** One bound Gateway port. */
export interface GatewayListener {
  readonly protocol: ListenerConfig['protocol'];
  readonly proxy: ProxyServer;
  /** HTTPS only */
  readonly certificates: CertificateStore | undefined;
}

export interface GatewayListenerDeps {
  /** Creates and binds the server of one port; rejects when the port cannot be bound. */
  open(config: ListenerConfig): Promise<GatewayListener>;
  log: Logger;
  /** Grace for requests in flight on a port that goes away. */
  drainMs: number;
}

export class GatewayListeners {
  private readonly deps: GatewayListenerDeps;
  private readonly bound = new Map<number, GatewayListener>();
  /** Port -> why it could not be bound. */
  readonly failures = new Map<number, string>();
  /** Applies run one after the other, in order. */
  private queue: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(deps: GatewayListenerDeps) {
    this.deps = deps;
  }

  /** Client connections open on the Gateway ports now. */
  get openConnections(): number {
    let open = 0;
    for (const listener of this.bound.values()) open += listener.proxy.openConnections;
    return open;
  }

  /** Ports bound now. */
  get ports(): number[] {
    return [...this.bound.keys()];
  }

  /** Makes the bound ports those of `listeners`. Resolves when done. */
  apply(listeners: ReadonlyMap<number, ListenerConfig>): Promise<void> {
    this.queue = this.queue.then(() => this.reconcile(listeners));
    return this.queue;
  }

  private async reconcile(listeners: ReadonlyMap<number, ListenerConfig>): Promise<void> {
    if (this.stopped) return;
    const { log } = this.deps;
    for (const [port, current] of this.bound) {
      const wanted = listeners.get(port);
      if (wanted !== undefined && wanted.protocol === current.protocol) continue;
      this.bound.delete(port);
      log.info({ port }, `Gateway listener port ${port} closed (${wanted === undefined ? 'no listener uses it any more' : `now ${wanted.protocol}`})`);
      await current.proxy.drain(this.deps.drainMs);
    }
    for (const [port, config] of listeners) {
      const current = this.bound.get(port);
      if (current !== undefined) {
        current.certificates?.update(config.certificates);
        continue;
      }
      try {
        const opened = await this.deps.open(config);
        this.bound.set(port, opened);
        if (this.failures.delete(port)) log.info({ port }, `Gateway listener port ${port} is bound now`);
        else log.info({ port, protocol: config.protocol }, `Gateway listener on port ${port} (${config.protocol})`);
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        if (this.failures.get(port) !== message) log.error({ port }, `Gateway listener port ${port} cannot be served: ${message}`);
        this.failures.set(port, message);
      }
    }
    for (const port of this.failures.keys()) if (!listeners.has(port)) this.failures.delete(port);
  }

  /** Drains every port; no port is bound after. */
  async drain(graceMs: number): Promise<void> {
    this.stopped = true;
    await this.queue;
    const all = [...this.bound.values()];
    this.bound.clear();
    await Promise.all(all.map((l) => l.proxy.drain(graceMs)));
  }
}
