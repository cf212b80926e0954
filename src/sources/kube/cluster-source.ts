// Cluster mode's source: one reflector per kind portico routes from, all feeding
// the same ObjectStore that standalone mode fills from files. (Gateway API kinds are
// not watched in cluster mode yet: see README "Gateway API".)
import { INGRESS_KINDS, type RoutingKind } from '../../model/k8s.ts';
import { RESOURCES } from '../../kube/resources.ts';
import { Reflector, type ReflectorOptions } from './reflector.ts';

/** The reflectors' shared options; the resource comes from RESOURCES per kind. */
export type ClusterSourceOptions = Pick<ReflectorOptions, 'client' | 'sink' | 'sanitize' | 'log' | 'namespace' | 'resyncMs' | 'onConnected'>;

export class ClusterSource {
  private readonly reflectors: Reflector[];
  private readonly connected = new Map<RoutingKind, boolean>();
  private allConnected: boolean | undefined;
  private everConnected = false;
  /** Resolves once every kind was listed once: the initial sync. */
  readonly synced: Promise<void>;

  constructor(o: ClusterSourceOptions) {
    this.reflectors = INGRESS_KINDS.map(
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
            const all = INGRESS_KINDS.every((k) => this.connected.get(k) === true);
            if (all !== this.allConnected) {
              this.allConnected = all;
              // Before the first full sync there are no known routes to speak of.
              const meanwhile = this.everConnected ? 'serving the last known routes' : 'nothing is served until the first list succeeds';
              if (all) this.everConnected = true;
              o.log.info({ connected: all }, all ? 'Kubernetes API connected' : `Kubernetes API not connected; ${meanwhile}`);
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
