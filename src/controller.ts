// The loop between sources and the proxy: when the object store changes, wait for
// the burst to settle, translate the objects, build a new route table and swap it in.
import type { Logger } from 'pino';
import { diffProblems, problemKey, withProblems, NO_PROBLEM_CHANGES, type EndpointUpdate, type Problem, type ProblemDelta, type RoutingConfig, type TranslateOptions, type UpstreamAddress } from './model/config.ts';
import type { ObjectChange, ObjectStore, StoreChangeEvent } from './sources/store.ts';
import { createTranslator, type IncrementalTranslator } from './translate/index.ts';
import type { KnownChecks } from './translate/tls.ts';
import type { RouteTable } from './routing/table.ts';

export interface ControllerDeps {
  store: ObjectStore;
  /** Builds the route table for a config and puts it in service (here, or in the workers too). */
  install(config: RoutingConfig): RouteTable;
  /** The table in service. */
  current(): RouteTable;
  /**
   * Moves the ready addresses of these backends in the live pools (here, or in the
   * workers too), without a new table: before a config is installed, or alone.
   */
  updateEndpoints(updates: readonly EndpointUpdate[]): void;
  /** Called after EndpointSlice changes were applied to the pools without translation (with the backends updated). */
  onEndpointsUpdated?: (updates: readonly EndpointUpdate[]) => void;
  translateOptions: TranslateOptions;
  /** TLS Secrets checked ahead of translation (src/tls/secret-checks.ts). */
  knownSecretChecks?: KnownChecks;
  log: Logger;
  /** Quiet time, in ms, that gathers a burst of changes into one rebuild (0: rebuild at once). */
  debounceMs: number;
  /** Problems that do not come from translation (unparsable manifest files...). */
  externalProblems?: () => readonly Problem[];
  /**
   * Called after each swap, with the time translation took. `problems`: how they changed
   * since the previous swap (a ProblemDelta), or all of them (an array: the first build, a
   * full re-check). `changes`: the store changes this rebuild translated; undefined when
   * everything was checked.
   */
  onRebuilt?: (table: RouteTable, translateMs: number, problems: readonly Problem[] | ProblemDelta, changes: readonly ObjectChange[] | undefined) => void;
  /** After each translation: how many Ingresses it translated (built again from their object). */
  onIngressesTranslated?: (count: number) => void;
  /** After each translation: how many HTTPRoutes and GRPCRoutes it attached again. */
  onGatewayRoutesTranslated?: (count: number) => void;
  /** Only the status of these objects changed (portico's own writes, mostly): nothing is rebuilt; status writers may check them. */
  onStatusOnly?: (changes: readonly ObjectChange[]) => void;
  /** Called with problems that appeared since the previous rebuild (Events, logs). */
  onNewProblems?: (problems: readonly Problem[]) => void;
}

export class Controller {
  private readonly deps: ControllerDeps;
  private readonly translate: IncrementalTranslator;
  private timer: NodeJS.Timeout | NodeJS.Immediate | undefined;
  /** The problems of the table in service, by problemKey, with how many times each is there. */
  private knownProblems = new Map<string, number>();
  private problemCount = 0;
  /** The translated config and the external problems knownProblems was made from: a delta must follow them. */
  private problemsOf: { readonly config: RoutingConfig; readonly external: readonly Problem[] } | undefined = undefined;
  /** "ns/name|reason" of the ignored Ingresses already logged (at debug level). */
  private knownIgnored = new Set<string>();
  /** performance.now() of the first change not yet served; for the change-to-serve figure. */
  private pendingSince: number | undefined;
  private started = false;
  /** What the table in service was built from, to skip rebuilds that would change nothing. */
  private lastTranslated: RoutingConfig | undefined = undefined;
  private lastExternal: readonly Problem[] | undefined = undefined;
  /** The store changes the next rebuild must translate; undefined: unknown, check everything. */
  private pendingChanges: ObjectChange[] | undefined = undefined;

  constructor(deps: ControllerDeps) {
    this.deps = deps;
    this.translate = createTranslator(deps.knownSecretChecks);
  }

  /** Rebuilds now and then after every change. Call once the sources loaded their initial state. */
  start(): RouteTable {
    this.started = true;
    this.pendingChanges = undefined;
    return this.rebuild();
  }

  /**
   * A source saw a change. With no quiet time (the default) the rebuild runs as soon as
   * the current I/O callbacks are done: changes that arrive together, or while a
   * rebuild runs (it is synchronous), are gathered into the next one, and a lone
   * change waits for nothing.
   */
  changed(event?: StoreChangeEvent | 'problems'): void {
    if (!this.started) return;
    // A status write (portico's own, coming back through the watch) changes nothing
    // routing reads: it is not translated, nor is anything rebuilt or shipped.
    if (event !== undefined && event !== 'problems' && event.changes.some((c) => c.statusOnly)) {
      const statusOnly = event.changes.filter((c) => c.statusOnly);
      this.deps.onStatusOnly?.(statusOnly);
      if (statusOnly.length === event.changes.length) return;
      event = { ...event, changes: event.changes.filter((c) => !c.statusOnly) };
    }
    // Translation works in proportion to what changed when it knows what did; a change
    // it is not told about (or a large burst) re-checks everything. New problems of the
    // sources change no object: nothing to translate again.
    if (event === undefined || (event !== 'problems' && (this.pendingChanges?.length ?? 0) + event.changes.length > MAX_TRACKED_CHANGES)) {
      this.pendingChanges = undefined;
    } else if (event !== 'problems') {
      this.pendingChanges?.push(...event.changes);
    }
    this.pendingSince ??= performance.now();
    if (this.timer) return;
    const run = () => {
      this.timer = undefined;
      this.rebuild();
    };
    this.timer = this.deps.debounceMs > 0 ? setTimeout(run, this.deps.debounceMs) : setImmediate(run);
  }

  /** Counts the endpoint updates applied (what addressesOf answers changes with it). */
  endpointsVersion = 0;

  /** Every backend whose addresses moved without translation, as it is now (a starting worker needs them). */
  trackedEndpoints(): EndpointUpdate[] {
    return this.translate.trackedEndpoints();
  }

  /** A backend's ready addresses now (its route's may be older, see updateEndpoints). */
  addressesOf(backend: { readonly key: string; readonly addresses: readonly UpstreamAddress[]; readonly error?: string }): readonly UpstreamAddress[] {
    return this.translate.addressesOf(backend);
  }

  rebuild(): RouteTable {
    const { deps } = this;
    const t0 = performance.now();
    let config: RoutingConfig;
    const changes = this.pendingChanges;
    this.pendingChanges = [];
    // EndpointSlice changes that only move ready addresses go to the live pools: no
    // translation, no table, nothing but the addresses shipped to workers.
    if (changes !== undefined && changes.length > 0 && this.lastTranslated !== undefined && changes.every((c) => c.kind === 'EndpointSlice')) {
      let updates: EndpointUpdate[] | undefined;
      try {
        updates = this.translate.endpoints(deps.store, deps.translateOptions, changes);
      } catch (err) {
        deps.log.error({ err }, 'applying endpoint changes failed; translating them instead');
      }
      if (updates !== undefined) {
        if (updates.length > 0) {
          this.endpointsVersion++;
          deps.updateEndpoints(updates);
          const changeToServeMs = this.pendingSince === undefined ? undefined : performance.now() - this.pendingSince;
          deps.log.debug(
            { backends: updates.map(([key]) => key), ...(changeToServeMs === undefined ? {} : { changeToServeMs: round(changeToServeMs) }) },
            'endpoints updated without a rebuild',
          );
          deps.onEndpointsUpdated?.(updates);
        }
        this.pendingSince = undefined;
        return deps.current();
      }
    }
    const translatedBefore = this.translate.ingressesTranslated();
    const routesBefore = this.translate.gatewayRoutesTranslated();
    try {
      config = this.translate(deps.store, deps.translateOptions, changes);
      // Backends moved earlier whose routes were translated again: the pools follow first.
      const moved = this.translate.takeEndpointUpdates();
      if (moved.length > 0) {
        this.endpointsVersion++;
        deps.updateEndpoints(moved);
      }
    } catch (err) {
      // A bug in translation must not take the proxy down: keep serving the last table.
      this.pendingChanges = undefined;
      deps.log.error({ err }, 'translation failed; still serving the previous route table');
      return deps.current();
    }
    const translateMs = performance.now() - t0;
    const ingressesTranslated = this.translate.ingressesTranslated() - translatedBefore;
    if (ingressesTranslated > 0) deps.onIngressesTranslated?.(ingressesTranslated);
    const gatewayRoutesTranslated = this.translate.gatewayRoutesTranslated() - routesBefore;
    if (gatewayRoutesTranslated > 0) deps.onGatewayRoutesTranslated?.(gatewayRoutesTranslated);
    // Problems of the sources (unreadable manifest files) go with the table, so /routes shows them too.
    const external = deps.externalProblems?.() ?? [];
    // Nothing that is served changed (a slice of a Service no route uses, say): the table
    // in service stays, and no worker is sent anything.
    if (config === this.lastTranslated && external === this.lastExternal) {
      this.pendingSince = undefined;
      return deps.current();
    }
    this.lastTranslated = config;
    this.lastExternal = external;
    const translated = config;
    // How the problems changed since the table in service: the translator's delta, and the
    // external lists compared (a few); everything when there is no delta to follow.
    const delta = this.problemChange(translated, external);
    if (external.length > 0) config = withProblems(translated, () => [...external, ...translated.problems]);
    const table = deps.install(config);

    const problems = delta ?? config.problems;
    this.reportProblems(problems);
    this.problemsOf = { config: translated, external };
    this.reportIgnored(config);
    const changeToServeMs = this.pendingSince === undefined ? undefined : performance.now() - this.pendingSince;
    this.pendingSince = undefined;
    deps.log.info(
      {
        version: table.version,
        routes: table.size,
        ingresses: config.servedIngresses.length,
        ingressesTranslated,
        ...(gatewayRoutesTranslated > 0 ? { gatewayRoutesTranslated } : {}),
        problems: this.problemCount,
        translateMs: round(translateMs),
        buildMs: round(table.buildMillis),
        ...(changeToServeMs === undefined ? {} : { changeToServeMs: round(changeToServeMs) }),
      },
      'route table updated',
    );
    deps.onRebuilt?.(table, translateMs, problems, changes);
    return table;
  }

  /**
   * `translated`'s problems and `external` against those of the table in service: a delta
   * when the translator's follows the config reported last; else undefined (compare every problem).
   */
  private problemChange(translated: RoutingConfig, external: readonly Problem[]): ProblemDelta | undefined {
    const before = this.problemsOf;
    if (before === undefined) return undefined;
    let delta: ProblemDelta;
    if (translated === before.config) delta = NO_PROBLEM_CHANGES;
    else if (translated.delta?.problems !== undefined && translated.delta.base === before.config.serial) delta = translated.delta.problems;
    else return undefined;
    if (external === before.external) return delta;
    const out = { added: [...delta.added], removed: [...delta.removed] };
    diffProblems(before.external, external, out);
    return out;
  }

  /** Logs the problems that appeared (once each, until they go), and hands them to onNewProblems. */
  private reportProblems(change: readonly Problem[] | ProblemDelta): void {
    const fresh: Problem[] = [];
    const known = this.knownProblems;
    if (Array.isArray(change)) {
      const all = change as readonly Problem[];
      const next = new Map<string, number>();
      for (const p of all) {
        const key = problemKey(p);
        next.set(key, (next.get(key) ?? 0) + 1);
        if (!known.has(key)) fresh.push(p);
      }
      this.knownProblems = next;
      this.problemCount = all.length;
    } else {
      const { added, removed } = change as ProblemDelta;
      // New: not there before this change (a problem found again in a new object is known).
      for (const p of added) if (!known.has(problemKey(p))) fresh.push(p);
      for (const p of removed) {
        const key = problemKey(p);
        const n = known.get(key);
        if (n === undefined || n <= 1) known.delete(key);
        else known.set(key, n - 1);
      }
      for (const p of added) {
        const key = problemKey(p);
        known.set(key, (known.get(key) ?? 0) + 1);
      }
      this.problemCount += added.length - removed.length;
    }
    for (const p of fresh) {
      const where = `${p.object.kind} ${p.object.namespace ? p.object.namespace + '/' : ''}${p.object.name}`;
      this.deps.log[p.severity === 'error' ? 'error' : 'warn']({ object: p.object, reason: p.reason }, `${where}: ${p.message}`);
    }
    if (fresh.length) this.deps.onNewProblems?.(fresh);
  }

  /**
   * Each Ingress not served, with why, once (until its reason changes): at debug level for
   * the Ingresses of other controllers' classes (a cluster has many), as a warning for
   * those naming an IngressClass that does not exist (no controller's: a typo, or a class
   * not created yet). No Events or status either way: they are not portico's to write.
   * The warnings of one rebuild are capped; the rest are counted in one line.
   */
  private reportIgnored(config: RoutingConfig): void {
    const next = new Set<string>();
    let warned = 0;
    const unlisted = new Map<string, number>();
    for (const ignored of config.ignoredIngresses) {
      const key = `${ignored.ingress}|${ignored.reason}`;
      next.add(key);
      if (this.knownIgnored.has(key)) continue;
      const message = `Ingress ${ignored.ingress} is not served: ${ignored.reason}`;
      if (ignored.missingClass === undefined) this.deps.log.debug({ ingress: ignored.ingress }, message);
      else if (warned < MAX_MISSING_CLASS_WARNINGS) {
        warned++;
        this.deps.log.warn({ ingress: ignored.ingress, reason: 'IngressClassNotFound', ingressClassName: ignored.missingClass }, message);
      } else unlisted.set(ignored.missingClass, (unlisted.get(ignored.missingClass) ?? 0) + 1);
    }
    if (unlisted.size > 0) {
      let count = 0;
      for (const n of unlisted.values()) count += n;
      const classes = [...unlisted].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).map(([name, n]) => `${JSON.stringify(name)}: ${n}`);
      this.deps.log.warn(
        { reason: 'IngressClassNotFound', ingresses: count },
        `${count} more Ingresses are not served: their spec.ingressClassName names no IngressClass (${classes.join(', ')}); /routes lists them under ignoredIngresses`,
      );
    }
    this.knownIgnored = next;
  }

  stop(): void {
    if (this.timer) {
      clearTimeout(this.timer as NodeJS.Timeout);
      clearImmediate(this.timer as NodeJS.Immediate);
    }
    this.timer = undefined;
    this.started = false;
  }
}

/** Warnings about Ingresses naming no IngressClass logged one by one in a rebuild; the rest are counted in one line. */
const MAX_MISSING_CLASS_WARNINGS = 20;

/** Beyond this many changes in one rebuild, checking everything is as cheap as tracking them. */
const MAX_TRACKED_CHANGES = 5000;

function round(ms: number): number {
  return Math.round(ms * 100) / 100;
}
