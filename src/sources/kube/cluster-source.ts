// Cluster mode's source: one reflector per kind portico routes from, all feeding
// the same ObjectStore that standalone mode fills from files.
import type { Logger } from 'pino';
import { ROUTING_KINDS, type KubeObject, type RoutingKind } from '../../model/k8s.ts';
import type { KubeClient } from '../../kube/client.ts';
import { RESOURCES } from '../../kube/resources.ts';
import { Reflector, type ReflectorSink } from './reflector.ts';

export interface ClusterSourceOptions {
  client: KubeClient;
  sink: ReflectorSink;
  sanitize: (raw: unknown) => KubeObject | undefined;
  log: Logger;
  /** Only this namespace (IngressClasses are cluster-scoped and always watched). */
  namespace?: string;
  resyncMs: number;
  /** true while every watch is connected. */
  onConnected?: (connected: boolean) => void;
}

export class ClusterSource {
  private readonly reflectors: Reflector[];
  private readonly connected = new Map<RoutingKind, boolean>();
  private allConnected: boolean | undefined;
  /** Resolves once every kind was listed once: the initial sync. */
  readonly synced: Promise<void>;

  constructor(o: ClusterSourceOptions) {
    this.reflectors = ROUTING_KINDS.map(
      (kind) =>
        new Reflector({
          client: o.client,
          resource: RESOURCES[kind],
          sink: o.sink,
          sanitize: o.sanitize,
          log: o.log,
          namespace: RESOURCES[kind].namespaced ? o.namespace : undefined,
          resyncMs: o.resyncMs,
          onConnected: (up) => {
            this.connected.set(kind, up);
            const all = ROUTING_KINDS.every((k) => this.connected.get(k) === true);
            if (all !== this.allConnected) {
              this.allConnected = all;
              o.log.info({ connected: all }, all ? 'Kubernetes API connected' : 'Kubernetes API connection lost; serving the last known routes');
              o.onConnected?.(all);
            }
          },
        }),
    );
    this.synced = Promise.all(this.reflectors.map((r) => r.synced)).then(() => undefined);
  }

  start(): void {
    for (const r of this.reflectors) r.start();
  }

  stop(): void {
    for (const r of this.reflectors) r.stop();
  }
}
