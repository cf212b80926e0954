// Assembles one portico process from its options. Used by the CLI and by tests.
//
// Three shapes, one code path for traffic:
// - single (--workers 1): the control plane (sources, translation, status, admin) and
//   the data plane (listeners, proxy) in one process;
// - primary (--workers N > 1): the control plane only; it ships each routing config to
//   N worker processes (src/workers) and aggregates their metrics;
// - worker: the data plane only, fed by the primary.
import type http from 'node:http';
import type { Logger } from 'pino';
import { AggregatorRegistry } from './util/prom.ts';
import type { Options } from './config/flags.ts';
import { CONTROLLER_NAME, type EndpointUpdate, type Problem, type RoutingConfig } from './model/config.ts';
import type { Secret } from './model/k8s.ts';
import { buildRouteTable, emptyRoutingConfig, RouteTableHolder, type Route, type RouteTable } from './routing/table.ts';
import type { ManifestDirectorySource } from './sources/standalone.ts';
import { generateSelfSigned } from './tls/certificates.ts';
import { SecretChecks } from './tls/secret-checks.ts';
import type { ClusterSource } from './sources/kube/cluster-source.ts';
import type { KubeClient } from './kube/client.ts';
import type { LeaderElector } from './kube/leader.ts';
import type { IngressStatusWriter } from './status/ingress-status.ts';
import type { GatewayStatusWriter } from './status/gateway-status.ts';
import type { EventRecorder } from './status/events.ts';
import { createLogger } from './util/log.ts';
import { PIPE_BUF } from './util/line-sinks.ts';
import { changeApplied, collectWhenIdle } from './util/idle-gc.ts';
import { logLongGcPauses } from './util/gc-pauses.ts';
import { startingUp, startUpOver, workArrived } from './util/compilers.ts';
import { createMetrics } from './admin/metrics.ts';
import { createAdminServer } from './admin/server.ts';
import { CidrSet, parseCidrList } from './middleware/cidr.ts';
import { configureRateLimitWorkers } from './middleware/rate-limit.ts';
import { setChallengeKey } from './challenge/tokens.ts';
import type { DataPlane } from './data-plane.ts';
import { ensurePortFree, listen } from './util/listen.ts';
import type { WorkerPool } from './workers/pool.ts';
import { ConfigReplica, type ToPrimary, type ToWorker } from './workers/protocol.ts';
import type { WakeSignals } from './scale-to-zero/gates.ts';
import type { SleepManager } from './scale-to-zero/manager.ts';
import { validatingInvalidate, type Invalidate, type InvalidationResult } from './cache/invalidation.ts';
import { invalidateLocal, invalidateThisProcess } from './cache/runtime.ts';
import { sayingWhenCacheOff } from './cache/cache-off.ts';
import type { InvalidationController } from './cache/invalidation-controller.ts';
import type { Cluster } from 'node:cluster';
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const { fstatSync } = process.getBuiltinModule('node:fs');
const { hostname } = process.getBuiltinModule('node:os');
// The module object itself is the cluster (its types describe an ES namespace with a default).
const cluster = process.getBuiltinModule('node:cluster') as unknown as Cluster;

/** How long the first translation waits for the TLS Secrets checked ahead (10,000 take 1-2 s). */
const SECRET_CHECKS_WAIT_MS = 20_000;

/** Cluster mode: what scale-to-zero needs of the API (loaded with the client). */
async function clusterScaling(kube: KubeClient, identity: string) {
  const { Workloads } = await import('./scale-to-zero/workloads.ts');
  const { ActivityLeases } = await import('./scale-to-zero/activity-leases.ts');
  return { workloads: new Workloads(kube), leases: new ActivityLeases(kube, identity) };
}

export interface Portico {
  log: Logger;
  holder: RouteTableHolder;
  /** Bound ports (useful with port 0). */
  ports: { http?: number; https?: number; admin?: number };
  /**
   * Applies a cache invalidation to every cache of this replica (each worker's), as the
   * admin POST /cache/purge and /cache/ban do; for the CacheInvalidation resource.
   */
  invalidate: Invalidate;
  stop(graceMs: number): Promise<void>;
  /** Client connections this process serves now; absent in a primary with workers (they serve). */
  openConnections?(): number;
}

export type Role = 'single' | 'primary' | 'worker';

/** " on http://host:port and https://host:port", naming only the listeners that are on. */
function listenerUrls(bind: string, ports: { http?: number; https?: number }): string {
  const host = bind.includes(':') ? `[${bind}]` : bind;
  const urls: string[] = [];
  if (ports.http !== undefined) urls.push(`http://${host}:${ports.http}`);
  if (ports.https !== undefined) urls.push(`https://${host}:${ports.https}`);
  return urls.length === 0 ? ' (no proxy listener: --http-port and --https-port are off)' : ` on ${urls.join(' and ')}`;
}

/** How often a worker tells the primary about its sleepable Services' traffic. */
const ACTIVITY_REPORT_MS = 500;

/** The primary's generated default certificate, handed to its workers. */
const WORKER_CERT = 'PORTICO_WORKER_DEFAULT_CERT';
const WORKER_KEY = 'PORTICO_WORKER_DEFAULT_KEY';

function stdoutIsPipe(): boolean {
  try {
    const stat = fstatSync(1);
    return stat.isFIFO() || stat.isSocket();
  } catch {
    return true;
  }
}

/** The role of this process: a worker when forked by a primary, else by --workers. */
export function roleOf(options: Options): Role {
  if (cluster.isWorker) return 'worker';
  return options.workers > 1 ? 'primary' : 'single';
}

export async function startPortico(options: Options, logger?: Logger, role: Role = 'single'): Promise<Portico> {
  const log = logger ?? createLogger(options.logLevel);
  startingUp(log);
  const portico = role === 'worker' ? await startWorker(options, log) : await startControlPlane(options, log, role);
  // Node 24 never runs V8's memory reducer in an ESM program: see src/util/idle-gc.ts.
  const stopCollecting = collectWhenIdle(log, () => portico.openConnections?.() ?? 0);
  const stopGcLog = logLongGcPauses(log);
  const stop = portico.stop.bind(portico);
  portico.stop = (graceMs) => {
    stopCollecting();
    stopGcLog();
    return stop(graceMs);
  };
  return portico;
}

/** A worker: serves traffic with the configs the primary sends. */
async function startWorker(options: Options, log: Logger): Promise<Portico> {
  const metrics = createMetrics();
  configureRateLimitWorkers(options.workers);
  // Workers share one stdout: into a pipe or socket (a container runtime's), only writes up
  // to PIPE_BUF (4096 bytes) stay whole, so access lines go out in writes of whole lines up
  // to that many bytes (line-sinks.ts bounds a pipe by itself; a socket needs it from here);
  // a file takes whole writes of any size.
  const cert = process.env[WORKER_CERT];
  const key = process.env[WORKER_KEY];
  const send = (message: ToPrimary) => {
    if (process.connected) process.send!(message);
  };
  // PURGE/BAN on this worker's listeners: the primary applies it to every worker.
  let nextInvalidation = 0;
  const invalidations = new Map<number, (result: InvalidationResult) => void>();
  const invalidate: Invalidate = validatingInvalidate(
    (request) =>
      new Promise((resolve) => {
        if (!process.connected) {
          resolve({ ok: false, message: 'the primary process is gone; nothing was invalidated' });
          return;
        }
        const id = ++nextInvalidation;
        invalidations.set(id, resolve);
        send({ t: 'invalidate-all', id, request });
      }),
  );
  // Loaded here and in a single process only: the primary of several workers serves no traffic.
  const { startDataPlane } = await import('./data-plane.ts');
  const data = await startDataPlane(options, log, metrics, {
    invalidate,
    accessLogWriteBytes: stdoutIsPipe() ? PIPE_BUF : undefined,
    defaultPems: cert !== undefined && key !== undefined ? { cert, key } : undefined,
    // Scale-to-zero is decided in the primary: wakes go there, and activity twice a second.
    wakeSignals: {
      wake: (service, policy) => send({ t: 'wake', service, policy }),
      timedOut: (service, count) => send({ t: 'wake-timeout', service, count }),
    },
  });
  setInterval(() => {
    const entries = data.gates.report();
    if (entries.length > 0) send({ t: 'activity', entries });
  }, ACTIVITY_REPORT_MS).unref();
  const replica = new ConfigReplica();
  let stopping: Promise<void> | undefined;
  process.on('message', (message: ToWorker) => {
    if (message.t === 'config' || message.t === 'endpoints') changeApplied();
    switch (message.t) {
      case 'config': {
        // The first config ends this worker's start-up; any later one is work.
        if (replica.serial === undefined) startUpOver();
        else workArrived(log, 'a routing change');
        const config = replica.apply(message);
        if (config === undefined) {
          // A delta on a config this worker does not have: ask for the whole one.
          send({ t: 'hello' });
          return;
        }
        const table = data.install(config);
        void data.gatewayListeners.apply(config.listeners).then(() =>
          send({ t: 'installed', serial: config.serial ?? 0, ports: data.ports, bindFailures: new Map(data.gatewayListeners.failures) }),
        );
        log.debug({ version: table.version, routes: table.size }, 'route table installed from the primary');
        break;
      }
      case 'endpoints':
        workArrived(log, 'an endpoint change');
        data.updateEndpoints(message.updates, message.replace);
        break;
      case 'challenge-key':
        setChallengeKey(Buffer.from(message.key, 'base64'));
        break;
      case 'invalidate':
        send({ t: 'invalidated', id: message.id, result: invalidateLocal(message.request) });
        break;
      case 'invalidated-all': {
        const resolve = invalidations.get(message.id);
        invalidations.delete(message.id);
        resolve?.(message.result);
        break;
      }
      case 'metrics':
        void metrics.registry.getMetricsAsJSON().then((json) => send({ t: 'metrics', id: message.id, metrics: json }));
        break;
      case 'stop':
        stopping ??= data.drain(message.graceMs).then(() => process.exit(0));
        break;
    }
  });
  // A worker whose primary is gone stops too (no orphan holding the ports).
  process.once('disconnect', () => {
    stopping ??= data.drain(options.shutdownGrace).then(() => process.exit(0));
  });
  send({ t: 'hello' });
  return {
    log,
    holder: data.holder,
    ports: data.ports,
    invalidate,
    openConnections: () => data.openConnections(),
    async stop(graceMs) {
      await (stopping ??= data.drain(graceMs));
    },
  };
}

/** Between two status checks of every Ingress while changes come (the others check what they touched). */
const FULL_STATUS_EVERY_MS = 10_000;

/** Sources, translation, status and admin; with the data plane here (single) or in workers (primary). */
async function startControlPlane(options: Options, log: Logger, role: 'single' | 'primary'): Promise<Portico> {
  // The control plane's modules (the store, the sanitizer, translation, YAML) are loaded
  // here, not at the top: a worker never runs them, and loading them cost each worker
  // about 100 modules of heap and the compiler work of their loading.
  const [{ Controller }, { ObjectStore }, { sanitize }, { loadChallengeKey }, { WorkerPool }] = await Promise.all([
    import('./controller.ts'),
    import('./sources/store.ts'),
    import('./sources/sanitize.ts'),
    import('./challenge/secret-key.ts'),
    import('./workers/pool.ts'),
  ]);
  const metrics = createMetrics();
  const store = new ObjectStore();
  // TLS Secrets the sources load before the first translation are checked meanwhile in
  // child processes (src/tls/secret-checks.ts); those of later changes are few and
  // checked by translation. Standalone mode feeds them a file at a time, slower than one
  // process checks them (a second, ~59 MB more during start, only ever looked needed
  // because this process, busy reading, answered late); a cluster's list comes at once.
  const secretChecks = new SecretChecks({ processes: options.manifests ? 1 : undefined });
  let checkingAhead = true;
  // Scale-to-zero's manager is made once the sources are known; the data planes signal it.
  let sleep: SleepManager | undefined;
  const wakeSignals: WakeSignals = {
    wake: (service) => sleep?.wake(service),
    timedOut: (service, count) => sleep?.timedOut(service, count),
  };

  /** The under-attack signing key (base64) the workers get; set once the sources are known. */
  let challengeKey: string | undefined;

  // ---- where tables go: this process' listeners, or the workers ----
  let data: DataPlane | undefined;
  let pool: WorkerPool | undefined;
  let holder: RouteTableHolder;
  let install: (config: RoutingConfig) => RouteTable;
  let updateEndpoints: (updates: readonly EndpointUpdate[]) => void;
  /** The ports portico's own listeners hold (a Gateway listener may not take them). */
  const ingressPorts = new Map<number, string>();
  if (role === 'single') {
    const { startDataPlane } = await import('./data-plane.ts');
    data = await startDataPlane(options, log, metrics, { wakeSignals });
    holder = data.holder;
    install = data.install;
    updateEndpoints = data.updateEndpoints;
    if (data.ports.http !== undefined) ingressPorts.set(data.ports.http, '--http-port');
    if (data.ports.https !== undefined) ingressPorts.set(data.ports.https, '--https-port');
  } else {
    // The workers share the listeners' ports (SO_REUSEPORT): fail here if anything holds one.
    if (options.httpPort > 0) await ensurePortFree(options.httpPort, options.bind, '--http-port');
    if (options.httpsPort > 0) await ensurePortFree(options.httpsPort, options.bind, '--https-port');
    // The primary keeps a table for /routes and /readyz; its routes are never served here.
    const stub = (config: Route['config']): Route => ({ config, handle: () => {} });
    holder = new RouteTableHolder(buildRouteTable(0, emptyRoutingConfig(), stub));
    let version = 0;
    // One generated default certificate for all workers (a client sees the same one on every connection).
    const pems = options.defaultCertificate === undefined && options.defaultKey === undefined ? await generateSelfSigned() : undefined;
    pool = new WorkerPool({
      count: options.workers,
      challengeKey: () => challengeKey,
      endpoints: () => controller.trackedEndpoints(),
      log,
      env: pems !== undefined ? { [WORKER_CERT]: pems.cert, [WORKER_KEY]: pems.key } : undefined,
      // A Gateway port a worker could not bind shows in the Gateway's status.
      onInstalled: () => void gatewayStatus?.reconcile(),
      onSleepMessage: (worker, message) => {
        if (message.t === 'activity') sleep?.activity(`worker-${worker}`, message.entries);
        else if (message.t === 'wake') wakeSignals.wake(message.service, message.policy);
        else wakeSignals.timedOut(message.service, message.count);
      },
    });
    holder.readyGate = () => pool!.allInstalled();
    install = (config) => {
      // Ship first: the workers serve the change while the primary builds its own table (/routes, /readyz).
      pool!.ship(config);
      const table = buildRouteTable(++version, config, stub, undefined, holder.current);
      holder.swap(table);
      return table;
    };
    updateEndpoints = (updates) => pool!.shipEndpoints(updates);
    if (options.httpPort > 0) ingressPorts.set(options.httpPort, '--http-port');
    if (options.httpsPort > 0) ingressPorts.set(options.httpsPort, '--https-port');
  }

  /** Whether a route of the live table has portico.dev/cache (else an invalidation says the cache is off). */
  const anyRouteCaches = () => holder.current.config.routes.some((r) => r.policies.some((p) => p.name === 'cache'));

  // ---- sources ----
  let fileProblems: readonly Problem[] = [];
  let standalone: ManifestDirectorySource | undefined;
  let clusterSource: ClusterSource | undefined;
  let kube: KubeClient | undefined;
  if (options.manifests) {
    // Loaded only in standalone mode (and not by workers): the YAML parser is a few MB.
    const { ManifestDirectorySource } = await import('./sources/standalone.ts');
    const { ManifestInvalidations } = await import('./cache/manifest-invalidations.ts');
    // `invalidate` is set below; files are read only once started.
    const manifestInvalidations = new ManifestInvalidations(sayingWhenCacheOff((request) => invalidate(request), anyRouteCaches), log);
    standalone = new ManifestDirectorySource({
      dir: options.manifests,
      store,
      log,
      onProblems: (p: readonly Problem[]) => {
        fileProblems = p;
        controller.changed('problems');
      },
      onCacheInvalidations: (file, objects) => manifestInvalidations.fileRead(file, objects),
      // Checked while the other files are read (the first load applies them all at its end).
      onObjectRead: (object) => {
        if (checkingAhead && object.kind === 'Secret') secretChecks.add(object as Secret);
      },
    });
  } else {
    // Loaded only in cluster mode: @kubernetes/client-node alone costs about 90 MB (and
    // without its generated API package, which lean-client-node keeps out, about 25 MB less).
    await import('./kube/lean-client-node.ts');
    const { KubeClient, loadKubeConfig } = await import('./kube/client.ts');
    const { ClusterSource } = await import('./sources/kube/cluster-source.ts');
    kube = new KubeClient(loadKubeConfig(options.kubeconfig));
    clusterSource = new ClusterSource({
      client: kube,
      sink: store,
      sanitize: (raw) => sanitize(raw).object,
      log,
      namespace: options.watchNamespace,
      resyncMs: options.resync,
      onConnected: (up) => metrics.setApiConnected(up),
    });
  }
  // Before the workers start: each gets this key before its first config.
  const key = await loadChallengeKey({ ref: options.challengeSecret, manifests: options.manifests, kube, log });
  setChallengeKey(key);
  challengeKey = key.toString('base64');

  const bindFailures = () => (pool !== undefined ? pool.bindFailures() : data!.gatewayListeners.failures);

  // ---- status and events (cluster mode, leader only) ----
  let statusWriter: IngressStatusWriter | undefined;
  let gatewayStatus: GatewayStatusWriter | undefined;
  let events: EventRecorder | undefined;
  let elector: LeaderElector | undefined;
  let invalidations: InvalidationController | undefined;
  const identity = `${process.env.POD_NAME ?? hostname()}-${process.pid}`;
  if (kube) {
    const { IngressStatusWriter } = await import('./status/ingress-status.ts');
    const { EventRecorder } = await import('./status/events.ts');
    const { LeaderElector } = await import('./kube/leader.ts');
    statusWriter = new IngressStatusWriter({
      client: kube,
      log,
      publishAddress: options.publishAddress,
      publishService: options.publishService,
      ingresses: () => store.ingresses,
      served: () => holder.current.config.servedIngresses,
    });
    const { GatewayStatusWriter } = await import('./status/gateway-status.ts');
    const ingressStatus = statusWriter;
    gatewayStatus = new GatewayStatusWriter({
      client: kube,
      log,
      controllerName: options.gatewayControllerName,
      addresses: () => ingressStatus.addresses(),
      desired: () => holder.current.config.gatewayStatus,
      gatewayClasses: () => store.gatewayClasses,
      gateways: () => store.gateways,
      httpRoutes: () => store.httpRoutes,
      grpcRoutes: () => store.grpcRoutes,
      bindFailures,
    });
    events = new EventRecorder({ client: kube, log, instance: identity, ingresses: () => store.ingresses, services: () => store.services });
    elector = new LeaderElector({
      client: kube,
      namespace: process.env.POD_NAMESPACE ?? options.leaseNamespace,
      name: options.leaseName,
      identity,
      leaseDurationMs: options.leaseDuration,
      renewDeadlineMs: options.renewDeadline,
      retryPeriodMs: options.retryPeriod,
      log,
      outage: clusterSource!.outage,
      onStartedLeading: () => {
        statusWriter!.active = true;
        gatewayStatus!.active = true;
        events!.active = true;
        void statusWriter!.reconcile();
        void gatewayStatus!.reconcile();
      },
      onStoppedLeading: () => {
        statusWriter!.active = false;
        gatewayStatus!.active = false;
        events!.active = false;
      },
    });
    const { InvalidationController } = await import('./cache/invalidation-controller.ts');
    const leader = elector;
    invalidations = new InvalidationController({
      client: kube,
      log,
      // The pod name, as status.replicas[] shows it (one entry per pod, kept across restarts).
      replica: process.env.POD_NAME ?? hostname(),
      // Set below, with the data plane's caches; called only once started.
      invalidate: sayingWhenCacheOff((request) => invalidate(request), anyRouteCaches),
      namespace: options.watchNamespace,
      resyncMs: options.resync,
      defaultTtlMs: options.cacheInvalidationTtl,
      isLeader: () => leader.isLeader,
      replicasService: options.publishService,
      events,
      outage: clusterSource!.outage,
    });
  }

  // ---- scale-to-zero ----
  const { SleepManager } = await import('./scale-to-zero/manager.ts');
  const recorder = events;
  const localGates = data?.gates;
  sleep = new SleepManager({
    store,
    log,
    registry: metrics.registry,
    ...(kube !== undefined ? await clusterScaling(kube, identity) : {}),
    events: recorder && ((ref, type, reason, message) => void recorder.recordAction(ref, type, reason, message)),
    isLeader: () => elector?.isLeader ?? false,
    localActivity: localGates && (() => localGates.report()),
    onProblems: () => controller.changed('problems'),
  });
  const sleepManager = sleep;
  // Problems of the sources and of sleepable Services go with the table; a new list only when one changed.
  let external: { files: readonly Problem[]; sleep: readonly Problem[]; all: readonly Problem[] } | undefined;
  const externalProblems = (): readonly Problem[] => {
    const files = fileProblems;
    const sleeping = sleepManager.problems();
    if (external?.files !== files || external.sleep !== sleeping) {
      external = { files, sleep: sleeping, all: sleeping.length === 0 ? files : files.length === 0 ? sleeping : [...files, ...sleeping] };
    }
    return external.all;
  };

  /** Date.now() of the last status check of every Ingress (one change checks only the Ingresses it touched). */
  let lastFullStatus = 0;
  const controller = new Controller({
    store,
    install,
    updateEndpoints: (updates) => updateEndpoints(updates),
    onEndpointsUpdated: (updates) => {
      metrics.countEndpointUpdates(updates.length);
      // A waking Service whose first endpoint is ready has woken.
      sleepManager.rebuilt();
    },
    current: () => holder.current,
    knownSecretChecks: secretChecks.known,
    translateOptions: {
      ingressClass: options.ingressClass,
      controllerName: CONTROLLER_NAME,
      allowExternalName: options.allowExternalName,
      gatewayControllerName: options.gatewayControllerName,
      ingressPorts,
    },
    log,
    debounceMs: options.debounce,
    externalProblems,
    onRebuilt: (table, translateMs, problems, changes) => {
      metrics.recordRebuild(table, translateMs, problems);
      sleepManager.rebuilt();
      // Which Ingresses portico serves changes with them, or with classes (and the
      // publish address with Services): check those, and everything now and then.
      const now = Date.now();
      if (changes === undefined || now - lastFullStatus > FULL_STATUS_EVERY_MS || changes.some((c) => c.kind === 'IngressClass' || c.kind === 'Service')) {
        lastFullStatus = now;
        void statusWriter?.reconcile();
      } else {
        const ingresses = changes.filter((c) => c.kind === 'Ingress').map((c) => c.key);
        if (ingresses.length > 0) void statusWriter?.reconcile(ingresses);
      }
      void gatewayStatus?.reconcile();
    },
    onIngressesTranslated: (count) => metrics.countIngressesTranslated(count),
    onGatewayRoutesTranslated: (count) => metrics.countGatewayRoutesTranslated(count),
    onNewProblems: (problems) => void events?.record(problems),
    // Someone else's status write is put right; portico's own finds nothing to do.
    onStatusOnly: (changes) => {
      const ingresses = changes.filter((c) => c.kind === 'Ingress').map((c) => c.key);
      if (ingresses.length > 0) void statusWriter?.reconcile(ingresses);
      if (ingresses.length < changes.length) void gatewayStatus?.reconcile();
    },
  });
  store.onChange((event) => {
    changeApplied();
    // portico's own status writes coming back are not work (cluster mode, after ready).
    if (event.changes.some((c) => !c.statusOnly)) workArrived(log, 'an object changed');
    // Debug: what changed, object by object (a resync lists at most a few, with the count).
    if (log.isLevelEnabled('debug')) {
      const shown = event.changes.slice(0, 5).map((c) => `${c.type} ${c.kind} ${c.key}`);
      log.debug({ changes: event.changes.length, version: event.version }, `objects changed: ${shown.join(', ')}${event.changes.length > 5 ? ', ...' : ''}`);
    }
    for (const change of event.changes) {
      if (change.kind === 'Service') sleepManager.serviceChanged(change.key);
      else if (checkingAhead && change.kind === 'Secret' && change.type !== 'deleted') {
        const secret = store.secrets.get(change.key);
        if (secret !== undefined) secretChecks.add(secret);
      }
    }
    controller.changed(event);
  });
  if (data !== undefined) {
    const local = data;
    holder.onSwap((table) => {
      // A port that could not be bound changes the Gateway's status: tell the writer once known.
      void local.gatewayListeners.apply(table.config.listeners).then(() => gatewayStatus?.reconcile());
    });
  }

  // ---- cache invalidation: this process' cache, or every worker's ----
  const invalidate: Invalidate = pool !== undefined ? validatingInvalidate((request) => pool!.invalidate(request)) : invalidateThisProcess;

  // ---- admin ----
  const ports: Portico['ports'] = {};
  let admin: http.Server | undefined;
  if (options.adminPort >= 0) {
    const routesAllowed = parseCidrList(options.adminRoutesAllow).valid;
    const allowed = routesAllowed.length > 0 ? new CidrSet(routesAllowed) : undefined;
    // With workers, /metrics adds up theirs (traffic) and the primary's (translation, API).
    const aggregated = pool === undefined
      ? undefined
      : async () => {
          const all = [await metrics.registry.getMetricsAsJSON(), ...(await pool!.metrics())];
          return AggregatorRegistry.aggregate(all as Parameters<typeof AggregatorRegistry.aggregate>[0]);
        };
    const metricsText = aggregated && (async () => (await aggregated()).metrics());
    const metricsJson = aggregated && (async () => (await aggregated()).getMetricsAsJSON());
    admin = createAdminServer({
      holder,
      registry: metrics.registry,
      metricsText,
      routesAllowed: allowed && ((ip) => allowed.has(ip)),
      sleepView: () => sleepManager.view(),
      metricsJson,
      listeners: () => ({ ...(data?.ports ?? pool!.ports), admin: ports.admin }),
      addressesOf: (backend) => controller.addressesOf(backend),
      addressesVersion: () => controller.endpointsVersion,
      ingressHosts: (key) => (store.ingresses.get(key)?.spec?.rules ?? []).map((r) => r.host ?? ''),
      invalidate,
    });
    ports.admin = await listen(admin, options.adminPort, options.adminBind, '--admin-port');
    ingressPorts.set(ports.admin, '--admin-port');
  }

  // Workers start once what can fail at start (the admin port, a bad kubeconfig) did not.
  pool?.start();

  // ---- initial sync, then serve ----
  try {
    if (standalone) await standalone.start();
    if (clusterSource) {
      clusterSource.start();
      elector!.start();
      await clusterSource.synced;
    }
  } catch (err) {
    pool?.abort();
    throw err;
  }
  sleepManager.start();
  const checksStarted = performance.now();
  // Bounded: what is not checked by then, translation checks (the same checks, slower).
  await secretChecks.settled(SECRET_CHECKS_WAIT_MS);
  checkingAhead = false;
  if (secretChecks.failure !== undefined) log.warn(`checking TLS Secrets in a child process failed (${secretChecks.failure}); translation checks them`);
  log.debug({ waitedMs: Math.round(performance.now() - checksStarted) }, 'TLS Secrets checked ahead of the first translation');
  controller.start();
  secretChecks.forget();
  // After the first table: a result's "the cache is off" speaks of the routes served.
  invalidations?.start();
  if (pool !== undefined) {
    await new Promise<void>((resolve) => {
      const check = () => (pool!.allInstalled() ? resolve() : setTimeout(check, 20));
      check();
    });
  }
  const served = data?.ports ?? pool!.ports;
  ports.http = served.http;
  ports.https = served.https;
  log.info(
    { mode: standalone ? 'standalone' : 'cluster', http: ports.http, https: ports.https, admin: ports.admin, routes: holder.current.size, workers: pool?.size ?? 1 },
    `portico ready: serving ${holder.current.size} routes${listenerUrls(options.bind, ports)}${pool ? ` with ${pool.size} workers` : ''}`,
  );
  startUpOver();

  return {
    log,
    holder,
    ports,
    invalidate,
    openConnections: () => data?.openConnections() ?? 0,
    async stop(graceMs: number) {
      holder.ready = false;
      controller.stop();
      secretChecks.stop();
      sleepManager.stop();
      standalone?.stop();
      clusterSource?.stop();
      invalidations?.stop();
      await elector?.stop();
      admin?.close();
      await Promise.all([data?.drain(graceMs), pool?.stop(graceMs)]);
      admin?.closeAllConnections();
    },
  };
}
