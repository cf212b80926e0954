// Cluster mode's source: one reflector per kind portico routes from, all feeding
// the same ObjectStore that standalone mode fills from files. The Gateway API kinds
// are watched only where their CRDs are installed: discovery is asked at start and,
// while they are missing, once a minute, so installing them needs no restart.
// An outage of the API is logged once for every kind (see ApiOutageLog), which leader
// election and the CacheInvalidation watch share through `outage`.
import { GATEWAY_KINDS, INGRESS_KINDS, type RoutingKind } from '../../model/k8s.ts';
import { KubeApiError } from '../../kube/client.ts';
import { RESOURCES } from '../../kube/resources.ts';
import { ApiOutageLog } from '../../kube/api-outage-log.ts';
import { Reflector, type ReflectorOptions } from './reflector.ts';

/** The reflectors' shared options; the resource comes from RESOURCES per kind. */
export type ClusterSourceOptions = Pick<ReflectorOptions, 'client' | 'sink' | 'sanitize' | 'log' | 'namespace' | 'resyncMs' | 'onConnected'> & {
  /** ms between discovery attempts while the Gateway API CRDs are missing (default 60 s). */
  gatewayDiscoveryMs?: number;
  /** Least ms between the reminders of an API outage (default 60 s). */
  outageReminderMs?: number;
};

const GATEWAY_API_PATH = '/apis/gateway.networking.k8s.io/v1';
/** Kinds older Gateway API installs lack: watched only when discovery lists them. */
const OPTIONAL_GATEWAY_KINDS: ReadonlySet<RoutingKind> = new Set(['GRPCRoute']);

export class ClusterSource {
  private readonly o: ClusterSourceOptions;
  private readonly reflectors: Reflector[] = [];
  private readonly connected = new Map<RoutingKind, boolean>();
  private allConnected: boolean | undefined;
  private everConnected = false;
  private discoveryTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** The Gateway API kinds whose reflectors run. */
  private readonly watching = new Set<RoutingKind>();
  private resolveGatewaySynced!: () => void;
  /** Resolves once every kind was listed once (Gateway kinds included when installed): the initial sync. */
  readonly synced: Promise<void>;
  /** Logs API outages once for every caller; give it to the other callers of the API. */
  readonly outage: ApiOutageLog;

  constructor(o: ClusterSourceOptions) {
    this.o = o;
    // Before the first full sync there are no known routes to speak of.
    const meanwhile = () => (this.everConnected ? 'serving the last known routes' : 'nothing is served until the first list succeeds');
    this.outage = new ApiOutageLog({ server: o.client.server, log: o.log, meanwhile, reminderMs: o.outageReminderMs });
    for (const kind of INGRESS_KINDS) this.reflectors.push(this.reflector(kind));
    const gatewaySynced = new Promise<void>((resolve) => (this.resolveGatewaySynced = resolve));
    this.synced = Promise.all([...this.reflectors.map((r) => r.synced), gatewaySynced]).then(() => undefined);
  }

  private reflector(kind: RoutingKind): Reflector {
    const o = this.o;
    return new Reflector({
      client: o.client,
      resource: RESOURCES[kind],
      sink: o.sink,
      sanitize: o.sanitize,
      log: o.log,
      namespace: RESOURCES[kind].namespaced ? o.namespace : undefined,
      resyncMs: o.resyncMs,
      outage: this.outage,
      onConnected: (up) => {
        this.connected.set(kind, up);
        this.reportConnected();
      },
    });
  }

  /** The metric follows every change; the log says when every kind is first listed (outages are the outage log's). */
  private reportConnected(): void {
    const all = this.reflectors.every((r) => this.connected.get(r.kind) === true);
    if (all === this.allConnected) return;
    this.allConnected = all;
    if (all && !this.everConnected) this.o.log.info({ connected: true, server: this.o.client.server }, `Kubernetes API ${this.o.client.server} connected: every watched kind listed`);
    if (all) this.everConnected = true;
    this.o.onConnected?.(all);
  }

  start(): void {
    for (const r of this.reflectors) r.start();
    void this.discoverGatewayApi(true);
  }

  /**
   * Starts the Gateway API reflectors once the API serves the group. GRPCRoute came to
   * v1 later than the other kinds (Gateway API v1.1): it is watched once discovery
   * lists it, and looked for again every minute until then.
   */
  private async discoverGatewayApi(first: boolean): Promise<void> {
    if (this.stopped) return;
    let served: ReadonlySet<string> | undefined;
    try {
      const list = await this.o.client.request<{ resources?: { name?: string }[] }>('GET', GATEWAY_API_PATH);
      served = new Set((list?.resources ?? []).map((r) => r.name ?? ''));
    } catch (err) {
      if (!(err instanceof KubeApiError && err.status === 404)) {
        // Unreachable or refused: the Ingress reflectors report the connection; try again soon.
        this.discoveryTimer = setTimeout(() => void this.discoverGatewayApi(first), 5_000);
        return;
      }
    }
    if (this.stopped) return;
    if (served === undefined) {
      if (first) this.o.log.info({ group: 'gateway.networking.k8s.io' }, 'Gateway API CRDs not installed: serving Ingress only (checked again every minute)');
      this.resolveGatewaySynced();
      this.discoveryTimer = setTimeout(() => void this.discoverGatewayApi(false), this.o.gatewayDiscoveryMs ?? 60_000);
      return;
    }
    const kinds = GATEWAY_KINDS.filter((kind) => !this.watching.has(kind) && (!OPTIONAL_GATEWAY_KINDS.has(kind) || served.has(RESOURCES[kind].plural)));
    if (kinds.length > 0 && (!first || this.watching.size > 0)) this.o.log.info({ group: 'gateway.networking.k8s.io', kinds }, 'Gateway API CRDs found: serving them');
    const added = kinds.map((kind) => this.reflector(kind));
    for (const kind of kinds) this.watching.add(kind);
    this.reflectors.push(...added);
    for (const r of added) r.start();
    void Promise.all(added.map((r) => r.synced)).then(() => this.resolveGatewaySynced());
    if ([...OPTIONAL_GATEWAY_KINDS].some((kind) => !this.watching.has(kind))) {
      this.discoveryTimer = setTimeout(() => void this.discoverGatewayApi(false), this.o.gatewayDiscoveryMs ?? 60_000);
    }
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.discoveryTimer);
    for (const r of this.reflectors) r.stop();
    this.outage.stop();
  }
}
