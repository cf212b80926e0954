// An in-process Kubernetes API server for tests. It speaks the real wire protocol
// (REST paths, Status errors, resourceVersions, list chunking, watch streams with
// bookmarks and 410 Expired, the three patch formats, the status subresource) so
// @kubernetes/client-node and portico's own client run against it unchanged. Fault
// hooks let tests break it the ways real clusters break: dropped watches, compacted
// history, error answers, and outages.
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Socket } from 'node:net';
import { generate } from 'selfsigned';
import { stringify } from 'yaml';
import { findByKind, KINDS } from './kinds.ts';
import { createRequestHandler, type InjectedFailure, type RequestRecord } from './http.ts';
import { Registry } from './registry.ts';
import { Store, type KubeObj } from './store.ts';
import { WatchHub } from './watch.ts';
import { WorkloadSimulator, type SimulateWorkloadOptions, type WorkloadSimulation } from './workload-simulator.ts';

export type { KubeObj } from './store.ts';
export type { RequestRecord } from './http.ts';
export type { SimulateWorkloadOptions, WorkloadAddress, WorkloadSimulation } from './workload-simulator.ts';

export interface FakeKubeApiServerOptions {
  /** Bearer token clients must send; random when omitted. */
  token?: string;
  /** HTTPS with a generated self-signed certificate (for 127.0.0.1 and localhost). */
  tls?: boolean;
  /** How often a watch with allowWatchBookmarks=true gets a BOOKMARK. Default 1000 ms. */
  bookmarkIntervalMs?: number;
  /** Events kept for watch resumption; older ones are compacted away (410). Default 10000. */
  historyLimit?: number;
  /** Serve as a cluster without CRDs (Gateway API, portico's CacheInvalidation): their groups answer 404 and are not discovered. */
  withoutCrds?: boolean;
}

export class FakeKubeApiServer {
  readonly token: string;
  /** PEM of the serving certificate, which is its own CA (TLS mode only). */
  readonly caPem: string | undefined;
  /** Every request received, in order. Clear it with `requests.length = 0`. */
  readonly requests: RequestRecord[] = [];

  private readonly server: Server;
  private readonly registry: Registry;
  private readonly hub: WatchHub;
  private readonly failures: InjectedFailure[] = [];
  private readonly sockets = new Set<Socket>();
  private readonly simulations = new Set<WorkloadSimulator>();
  private port = 0;
  private listening = false;

  private constructor(options: FakeKubeApiServerOptions, tls: { cert: string; key: string } | undefined) {
    this.token = options.token ?? randomBytes(24).toString('base64url');
    this.caPem = tls?.cert;
    const store = new Store(options.historyLimit ?? 10_000);
    this.registry = new Registry(store);
    this.hub = new WatchHub(store, options.bookmarkIntervalMs ?? 1000);
    const handler = createRequestHandler({
      token: this.token,
      registry: this.registry,
      hub: this.hub,
      requests: this.requests,
      failures: this.failures,
      hiddenGroups: new Set(options.withoutCrds ? KINDS.filter((k) => k.crd).map((k) => k.group) : []),
      address: () => `127.0.0.1:${this.port}`,
    });
    this.server = tls ? createHttpsServer({ cert: tls.cert, key: tls.key }, handler) : createHttpServer(handler);
    // Watches are long-lived; the defaults would cut them (requestTimeout) or keep dead peers (keepAlive).
    this.server.requestTimeout = 0;
    this.server.headersTimeout = 60_000;
    this.server.keepAliveTimeout = 5_000;
    this.server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
  }

  static async start(options: FakeKubeApiServerOptions = {}): Promise<FakeKubeApiServer> {
    const tls = options.tls ? await selfSignedCertificate() : undefined;
    const server = new FakeKubeApiServer(options, tls);
    await server.listen(0);
    return server;
  }

  get url(): string {
    return `${this.caPem ? 'https' : 'http'}://127.0.0.1:${this.port}`;
  }

  /** The current global resourceVersion. */
  get resourceVersion(): string {
    return String(this.registry.store.resourceVersion);
  }

  /** Open watch streams. */
  get watchCount(): number {
    return this.hub.count;
  }

  /** A kubeconfig (YAML) for this server: bearer token, and the CA in TLS mode. */
  kubeconfig(): string {
    const cluster: Record<string, string | boolean> = { server: this.url };
    if (this.caPem) cluster['certificate-authority-data'] = Buffer.from(this.caPem).toString('base64');
    // client-node refuses plain http:// servers unless TLS verification is explicitly off.
    else cluster['insecure-skip-tls-verify'] = true;
    return stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'fake', cluster }],
      users: [{ name: 'fake', user: { token: this.token } }],
      contexts: [{ name: 'fake', context: { cluster: 'fake', user: 'fake', namespace: 'default' } }],
      'current-context': 'fake',
      preferences: {},
    });
  }

  /** Writes the kubeconfig to dir/kubeconfig (mode 0600) and returns its path. */
  writeKubeconfig(dir: string): string {
    const path = join(dir, 'kubeconfig');
    writeFileSync(path, this.kubeconfig(), { mode: 0o600 });
    return path;
  }

  // ---- fault hooks ----

  /** Resets every open watch connection mid-stream. Returns how many there were. */
  dropWatches(): number {
    return this.hub.dropAll();
  }

  /**
   * The next n requests (after authentication) get `status` with a Status body; with
   * `matches`, only requests it accepts count (e.g. `(r) => r.verb === 'update'`).
   */
  failNext(n: number, status = 500, matches?: (request: RequestRecord) => boolean): void {
    for (let i = 0; i < n; i++) this.failures.push({ status, matches });
  }

  /** Forgets the event history: watches or continue tokens from older resourceVersions get 410. */
  compact(): void {
    this.registry.store.compact();
  }

  /** Stops listening and resets every connection; data is kept. */
  async goDown(): Promise<void> {
    if (!this.listening) return;
    this.listening = false;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.hub.dropAll();
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }

  /** Listens again on the same port, with the same data. */
  async comeUp(): Promise<void> {
    if (this.listening) return;
    await this.listen(this.port);
  }

  async stop(): Promise<void> {
    this.failures.length = 0;
    for (const simulation of [...this.simulations]) simulation.stop();
    await this.goDown();
  }

  // ---- direct state access, as a controller or kubectl would change things ----

  /** Creates or replaces an object (status included), emitting ADDED or MODIFIED. Returns the stored object. */
  apply<T extends { kind?: string; apiVersion?: string; metadata?: object }>(obj: T): KubeObj {
    return structuredClone(this.registry.apply(obj as unknown as KubeObj));
  }

  /**
   * Deletes an object, emitting DELETED; returns it, or undefined if there was none.
   * kind is a Kind or plural ("Ingress", "ingresses"); "events.k8s.io/v1/Event" picks the
   * events.k8s.io Event over the core one. Cluster-scoped kinds ignore the namespace.
   */
  remove(kind: string, namespace: string | undefined, name: string): KubeObj | undefined {
    const removed = this.registry.remove(this.kind(kind), namespace, name);
    return removed && structuredClone(removed);
  }

  /** Reads an object directly, or undefined. */
  get(kind: string, namespace: string | undefined, name: string): KubeObj | undefined {
    const r = this.kind(kind);
    try {
      return structuredClone(this.registry.get(r, r.namespaced ? (namespace ?? 'default') : undefined, name));
    } catch {
      return undefined;
    }
  }

  /** The current objects of a kind (all namespaces, or one). */
  list(kind: string, namespace?: string): KubeObj[] {
    const r = this.kind(kind);
    return this.registry.store
      .list(r)
      .map(([, obj]) => obj)
      .filter((obj) => !namespace || !r.namespaced || obj.metadata.namespace === namespace)
      .map((obj) => structuredClone(obj));
  }

  /**
   * Plays the workload's controller and the EndpointSlice controller for one Deployment or
   * StatefulSet behind a Service: on spec.replicas N > 0 (by any write), after bootDelayMs,
   * the Service's EndpointSlice lists min(N, addresses) ready endpoints and the workload's
   * status shows them; at 0 the endpoints are withdrawn at once (the slice stays, empty).
   * A change superseded before its boot delay ran is cancelled. Stopped by stop() or api.stop().
   */
  simulateWorkload(options: SimulateWorkloadOptions): WorkloadSimulation {
    const simulation = new WorkloadSimulator(this.registry, options, (s) => this.simulations.delete(s));
    this.simulations.add(simulation);
    return simulation;
  }

  private kind(kind: string) {
    const r = findByKind(kind);
    if (!r) throw new Error(`kube-apiserver: unknown kind ${kind}`);
    return r;
  }

  private listen(port: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const onError = (err: Error) => reject(err);
      this.server.once('error', onError);
      this.server.listen(port, '127.0.0.1', () => {
        this.server.off('error', onError);
        this.port = (this.server.address() as { port: number }).port;
        this.listening = true;
        resolve();
      });
    });
  }
}

/** A self-signed certificate for 127.0.0.1/localhost that is also its own CA (for kubeconfig CA data). */
async function selfSignedCertificate(): Promise<{ cert: string; key: string }> {
  const notBeforeDate = new Date(Date.now() - 60_000);
  const pems = await generate([{ name: 'commonName', value: 'kube-apiserver' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    notBeforeDate,
    notAfterDate: new Date(notBeforeDate.getTime() + 24 * 3600 * 1000),
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', digitalSignature: true, keyCertSign: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }, { type: 2, value: 'localhost' }] },
    ],
  });
  return { cert: pems.cert, key: pems.private };
}
