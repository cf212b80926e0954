// Translation: Kubernetes objects -> what to serve (RoutingConfig), plus the problems
// found per object. Pure: no I/O, no clock; the output depends only on the snapshot
// and the options. Modelled on Contour's internal/dag: one processor per kind
// (ingress-class.ts, ingress.ts, backends.ts, tls.ts), then assembly.ts settles what
// several Ingresses claim at once, host by host. Gateway API objects go through their
// own processors (gateway-api/) into the same model.
//
// Proportional work: given the objects that changed since the previous call (the
// store's change events), only the Ingresses they concern are translated again (an
// Ingress, or the Ingresses that read a changed Service, EndpointSlice or Secret), and
// only the hosts those touch are settled again; an IngressClass change looks again at
// the Ingresses naming the classes it moved (class-index.ts). Without the changes (or
// after an option change) everything is re-checked, memoized by object identity (the
// store replaces objects on change, never mutates them). Problems are kept per source
// (Ingress, host, classes, Gateway route) and each config says which appeared and which
// went since the previous one (delta.problems); the sorted list is made only when read.
import type { EndpointUpdate, IgnoredIngress, Problem, ProblemDelta, RouteConfig, RoutingConfig, Snapshot, TranslateOptions, UpstreamAddress } from '../model/config.ts';
import { diffProblems, NO_GATEWAYS, problemChanges, problemDelta, withLazyRoutes, type ProblemChanges } from '../model/config.ts';
import { PatchedMap } from '../util/patched-map.ts';
import { GATEWAY_KINDS, type GRPCRoute, type HTTPRoute, type Ingress } from '../model/k8s.ts';
import type { ObjectChange } from '../sources/store.ts';
import { serviceOf } from '../sources/store.ts';
import { deepEqual } from '../util/deep-equal.ts';
import { changedKeys, sameItems } from '../util/changed-keys.ts';
import { IngressAssembly } from './assembly.ts';
import { BackendResolver } from './backends.ts';
import { translateGatewayApi, updateGatewayApi, type GatewayApiDeps, type GatewayApiOutput } from './gateway-api/index.ts';
import { buildIngressEntry, isCurrent, type IngressContext, type IngressEntry } from './ingress.ts';
import { selectClasses, type ClassSelection } from './ingress-class.ts';
import { IngressClassIndex } from './class-index.ts';
import { SecretParser, type KnownChecks } from './tls.ts';
import { insertSorted, removeSorted } from '../util/sorted.ts';
import { KeySets } from '../util/key-sets.ts';

/** `changes`: what changed since the previous call; absent when unknown (everything is checked). */
export type Translator = (snapshot: Snapshot, options: TranslateOptions, changes?: readonly ObjectChange[]) => RoutingConfig;

/**
 * A translator that remembers its previous work, and applies EndpointSlice changes that
 * only move ready addresses without translating anything (see endpoints()).
 */
export interface IncrementalTranslator extends Translator {
  /**
   * EndpointSlice changes alone: when they change nothing but the ready addresses of
   * backends (no problem appears or goes, no error), the backends whose addresses
   * changed, for the live pools; the routes, their problems and the config stay as they
   * are. undefined when translation is needed (then call the translator with them).
   */
  endpoints(snapshot: Snapshot, options: TranslateOptions, changes: readonly ObjectChange[]): EndpointUpdate[] | undefined;
  /**
   * After a translation: the backends endpoints() moved whose addresses that translation
   * read again (their routes are fresh), with what they are now, or null when no route
   * reads them any more. Apply them before installing the config.
   */
  takeEndpointUpdates(): EndpointUpdate[];
  /** Every backend whose addresses endpoints() moved, as it is now (for a worker that starts). */
  trackedEndpoints(): EndpointUpdate[];
  /**
   * Ingresses translated (an entry built from the object) since the translator was made:
   * what a change cost. A status-only update, or a full re-check of unchanged objects, adds
   * nothing.
   */
  ingressesTranslated(): number;
  /**
   * Ingresses looked at (whether served, and whether their entry is current) since the
   * translator was made: a change to one object adds about the Ingresses it concerns.
   */
  ingressesChecked(): number;
  /** HTTPRoutes and GRPCRoutes translated (not reused) since the translator was made. */
  gatewayRoutesTranslated(): number;
  /** A backend's ready addresses: those endpoints() moved it to, else its own. */
  addressesOf(backend: { readonly key: string; readonly addresses: readonly UpstreamAddress[]; readonly error?: string }): readonly UpstreamAddress[];
}

/** One-shot translation, without memoization across calls. */
export function translate(snapshot: Snapshot, options: TranslateOptions): RoutingConfig {
  return createTranslator()(snapshot, options);
}

interface TranslatorState {
  readonly options: TranslateOptions;
  readonly backends: BackendResolver;
  readonly secrets: SecretParser;
  readonly assembly: IngressAssembly;
  classSignature: string | undefined;
  /** The classes of the previous call, and the Ingresses by the class they name: an IngressClass change re-checks only those it can change. */
  classes: ClassSelection | undefined;
  readonly byClass: IngressClassIndex;
  /** Why each Ingress portico does not serve is not served, by key. */
  readonly ignored: Map<string, IgnoredIngress>;
  ignoredList: readonly IgnoredIngress[];
  /** "ns/name" of the served Ingresses, sorted. */
  served: string[];
  /**
   * The problems of each served Ingress that has some, as last given out (each config keeps
   * its own version, from which its problem list is made on first use).
   */
  ingressProblems: PatchedMap<string, readonly Problem[]>;
  /** Reverse dependencies: Service key / Secret key -> the Ingresses whose entry read it. */
  readonly readers: KeySets;
  /** EndpointSlice key -> "ns/service" it belongs to (for slices that are gone by the time their change is seen). */
  readonly sliceService: Map<string, string>;
  /** Why an Ingress object is not served, kept while the object and the classes are the same. */
  ignoredReasons: WeakMap<Ingress, { readonly classes: unknown; readonly entry: IgnoredIngress }>;
  gateway: { readonly output: GatewayApiOutput; readonly certificateReads: ReadonlySet<string> } | undefined;
  /**
   * Backends ("ns/service:port") whose addresses endpoints() moved since their routes were
   * translated: their current addresses. The routes of a backend here may carry older ones.
   */
  readonly tracked: Map<string, readonly UpstreamAddress[]>;
  /** Updates of `tracked` made by the last translation, for takeEndpointUpdates(). */
  endpointUpdates: EndpointUpdate[];
  last: RoutingConfig | undefined;
  serial: number;
}

function sameOptions(a: TranslateOptions, b: TranslateOptions): boolean {
  return (
    a.ingressClass === b.ingressClass &&
    a.controllerName === b.controllerName &&
    a.allowExternalName === b.allowExternalName &&
    a.gatewayControllerName === b.gatewayControllerName &&
    a.ingressPorts === b.ingressPorts
  );
}

const GATEWAY_KIND_SET: ReadonlySet<string> = new Set(GATEWAY_KINDS);
/** A change to one route: only that route is translated again (its key is "<kind>:<ns>/<name>"). */
const ROUTE_CHANGE = /^(?:HTTPRoute|GRPCRoute):/;

/**
 * A translate function that remembers its previous work; keep one per controller.
 * `knownChecks`: TLS Secrets checked ahead (src/tls/secret-checks.ts); the others are checked here.
 */
export function createTranslator(knownChecks?: KnownChecks): IncrementalTranslator {
  let state: TranslatorState | undefined;
  let ingressesTranslated = 0;
  let ingressesChecked = 0;
  let gatewayRoutesTranslated = 0;

  const translator = (snapshot: Snapshot, options: TranslateOptions, changes?: readonly ObjectChange[]): RoutingConfig => {
    let full = changes === undefined;
    // A state made anew has nothing to compare with; a full re-check of a kept one (no
    // changes given) still knows which hosts it changed.
    let fresh = false;
    if (!state || !sameOptions(state.options, options)) {
      state = {
        options,
        backends: new BackendResolver(),
        secrets: new SecretParser(knownChecks),
        assembly: new IngressAssembly(),
        classSignature: undefined,
        classes: undefined,
        byClass: new IngressClassIndex(),
        ignored: new Map(),
        ignoredList: [],
        served: [],
        ingressProblems: PatchedMap.of(),
        readers: new KeySets(),
        sliceService: new Map(),
        ignoredReasons: new WeakMap(),
        gateway: undefined,
        tracked: state?.tracked ?? new Map(),
        endpointUpdates: state?.endpointUpdates ?? [],
        last: undefined,
        serial: 0,
      };
      full = true;
      fresh = true;
    }
    const s = state;
    s.backends.begin(snapshot, options);
    const ctx: IngressContext = { snapshot, backends: s.backends, secrets: s.secrets };
    const classes = selectClasses(snapshot, options);
    const previousClasses = s.classes;
    const classesMoved = classes.signature !== s.classSignature;
    if (classesMoved && previousClasses === undefined) full = true;
    const classProblemsChanged = previousClasses !== undefined && !deepEqual(previousClasses.problems, classes.problems);
    s.classSignature = classes.signature;
    s.classes = classes;

    // Which Ingresses to look at again, and which keys (Services, Secrets) changed.
    const touched = new Set<string>();
    let dirty: Iterable<string>;
    if (full) {
      dirty = new Set([...snapshot.ingresses.keys(), ...s.assembly.keys(), ...s.ignored.keys()]);
      s.sliceService.clear();
      for (const [key, slice] of snapshot.endpointSlices) {
        const service = serviceOf(slice);
        if (service !== undefined) s.sliceService.set(key, service);
      }
    } else {
      const keys = new Set<string>();
      for (const change of changes!) {
        switch (change.kind) {
          case 'Ingress':
            keys.add(change.key);
            break;
          case 'Service':
          case 'Secret':
            touched.add(change.key);
            for (const reader of s.readers.members(change.key)) keys.add(reader);
            break;
          case 'EndpointSlice': {
            const slice = snapshot.endpointSlices.get(change.key);
            const before = s.sliceService.get(change.key);
            const now = slice === undefined ? undefined : serviceOf(slice);
            if (now === undefined) s.sliceService.delete(change.key);
            else s.sliceService.set(change.key, now);
            for (const service of [before, now]) {
              if (service === undefined) continue;
              touched.add(service);
              for (const reader of s.readers.members(service)) keys.add(reader);
            }
            break;
          }
          default:
            if (GATEWAY_KIND_SET.has(change.kind)) touched.add(`${change.kind}:${change.key}`);
        }
      }
      if (classesMoved) {
        // Only the Ingresses naming a class whose standing moved (or none, when the
        // default did); every ignored one when the list of portico's classes, which
        // its reason quotes, changed.
        for (const key of s.byClass.affected(previousClasses!, classes)) keys.add(key);
        if (!sameSet(previousClasses!.ours, classes.ours)) for (const key of s.ignored.keys()) keys.add(key);
      }
      dirty = keys;
    }

    // Translate those Ingresses (entries are reused while what they read is the same).
    const updates = new Map<string, IngressEntry | undefined>();
    // What the problems of this config add and remove, source by source (an Ingress, a
    // host's conflicts, the classes, a Gateway route): in proportion to what was looked at.
    const problemsFound = problemChanges();
    const ingressProblemLists: [string, readonly Problem[] | undefined][] = [];
    const ingressProblems = (key: string, before: readonly Problem[], now: readonly Problem[]) => {
      if (before === now || (before.length === 0 && now.length === 0)) return;
      diffProblems(before, now, problemsFound);
      ingressProblemLists.push([key, now.length > 0 ? now : undefined]);
    };
    let ignoredChanged = false;
    for (const key of dirty) {
      const ingress = snapshot.ingresses.get(key);
      ingressesChecked++;
      s.byClass.set(key, ingress);
      const previous = s.assembly.entry(key);
      if (ingress !== undefined && classes.serves(ingress)) {
        const entry = previous && isCurrent(previous, ingress, ctx) ? previous : buildIngressEntry(ingress, ctx, previous, key);
        if (entry !== previous) {
          ingressesTranslated++;
          if (previous !== undefined) unindexReads(s, key, previous);
          indexReads(s, key, entry);
          updates.set(key, entry);
        }
        ingressProblems(key, previous?.problems ?? NO_PROBLEMS, entry.problems);
        if (previous === undefined) insertSorted(s.served, key);
        if (s.ignored.delete(key)) ignoredChanged = true;
      } else {
        if (previous !== undefined) {
          unindexReads(s, key, previous);
          updates.set(key, undefined);
          removeSorted(s.served, key);
          ingressProblems(key, previous.problems, NO_PROBLEMS);
        }
        if (ingress === undefined) {
          if (s.ignored.delete(key)) ignoredChanged = true;
        } else {
          const entry = ignoredEntry(s, key, ingress, classes);
          if (s.ignored.get(key) !== entry) {
            s.ignored.set(key, entry);
            ignoredChanged = true;
          }
        }
      }
    }
    if (full) s.backends.prune();
    const assembled = s.assembly.apply(updates, fresh);
    if (ingressProblemLists.length > 0) s.ingressProblems = s.ingressProblems.with(ingressProblemLists);
    addDelta(problemsFound, assembled.conflictDelta);
    if (previousClasses === undefined || classProblemsChanged) diffProblems(previousClasses?.problems ?? NO_PROBLEMS, classes.problems, problemsFound);
    if (ignoredChanged || full) s.ignoredList = [...s.ignored.values()].sort((a, b) => compareStrings(a.ingress, b.ingress));

    // Gateway API: translated again when one of its objects, or something it read, changed;
    // HTTPRoutes whose object and Services did not change keep their fragment.
    let gateway = s.gateway;
    const gatewayInUse = snapshot.gatewayClasses.size > 0 || snapshot.gateways.size > 0;
    if (!gatewayInUse) gateway = undefined;
    else if (full || gateway === undefined || [...touched].some((key) => key.includes(':') || gateway!.output.readers.has(key) || gateway!.certificateReads.has(key))) {
      // Gateways, classes, grants, namespaces or certificates: the routes they can change are
      // attached again (all of them when there is no previous output to patch).
      const structural = full || gateway === undefined || [...touched].some((key) => (key.includes(':') && !ROUTE_CHANGE.test(key)) || gateway!.certificateReads.has(key));
      const patchable = !full && gateway !== undefined;
      const previous = gateway?.output.fragments;
      const reuse = !patchable || previous === undefined
        ? undefined
        : (key: string, route: HTTPRoute | GRPCRoute) => {
            const fragment = previous.get(key);
            if (fragment === undefined || !sameRouting(fragment.route, route)) return undefined;
            for (const read of fragment.reads) if (touched.has(read)) return undefined;
            return fragment;
          };
      gateway = translateGateway(s, snapshot, options, reuse, patchable ? touched : undefined, structural);
      if (gateway !== s.gateway) gatewayRoutesTranslated += gateway.output.translated;
    }
    const gatewayChanged = gateway !== s.gateway;
    if (gatewayChanged) gatewayProblemDelta(s.gateway?.output, gateway?.output, problemsFound);
    const changedGatewayRoutes = gatewayChanged ? (gateway?.output.changedSources ?? changedSources(s.gateway?.output.routesBySource, gateway?.output.routesBySource)) : undefined;
    s.gateway = gateway;
    refreshTracked(s, full ? undefined : touched);

    const last = s.last;
    if (last !== undefined && assembled.changedHosts?.size === 0 && assembled.defaultBackend === last.defaultBackend && !gatewayChanged && !ignoredChanged && !classesMoved && !classProblemsChanged && updates.size === 0 && !full) {
      return last;
    }

    // Read when the route list is (a getter that makes every Gateway route).
    const gatewayOutput = gateway?.output;
    // The whole sorted list is made when someone reads it (/routes, a full report), from
    // this config's own versions of the per-source lists; a change passes on its delta.
    const classProblems = classes.problems;
    const byIngress = s.ingressProblems;
    const problems = (): readonly Problem[] => {
      const list: Problem[] = [...classProblems];
      for (const entryProblems of byIngress.values()) for (const p of entryProblems) list.push(p);
      const conflicts = [...assembled.conflicts()].sort((a, b) => compareStrings(a.key, b.key) || a.seq - b.seq);
      for (const c of conflicts) list.push(c.problem);
      if (gatewayOutput !== undefined) for (const p of gatewayOutput.problems) list.push(p);
      // Stable: an object's problems stay in the order they were found (spec order, then conflicts).
      return list.sort(compareProblemObjects);
    };
    const config: RoutingConfig = withLazyRoutes({
      routeCount: assembled.routeCount + (gateway?.output.routeCount ?? 0),
      ...(assembled.defaultBackend ? { defaultBackend: assembled.defaultBackend } : {}),
      certificates: assembled.certificates,
      servedIngresses: s.served.slice(),
      ignoredIngresses: s.ignoredList,
      ...(gateway !== undefined ? { listeners: gateway.output.listeners, gatewayStatus: gateway.output.status } : NO_GATEWAYS),
      ingressHosts: assembled.byHost,
      ...(gateway !== undefined ? { gatewayRoutes: gateway.output.routesBySource } : {}),
      serial: ++s.serial,
      ...(last?.serial !== undefined && assembled.changedHosts !== undefined && !fresh
        ? {
            delta: {
              base: last.serial,
              hosts: assembled.changedHosts,
              gateway: gatewayChanged,
              ...(changedGatewayRoutes !== undefined ? { gatewayRoutes: changedGatewayRoutes } : {}),
              ...(assembled.changedCertificates !== undefined ? { certificates: assembled.changedCertificates } : {}),
              // After a full re-check, the whole lists are compared (it cost every object already).
              ...(full ? {} : { problems: problemDelta(problemsFound) }),
            },
          }
        : {}),
    }, () => (gatewayOutput === undefined ? assembled.routes() : [...assembled.routes(), ...gatewayOutput.routes]), problems);
    s.last = config;
    return config;
  };

  const endpoints: IncrementalTranslator['endpoints'] = (snapshot, options, changes) => {
    const s = state;
    if (s === undefined || s.last === undefined || !sameOptions(s.options, options)) return undefined;
    // The Services the slices belong to, before and after (a slice may change Service).
    const moves: [string, string | undefined][] = [];
    const services = new Set<string>();
    for (const change of changes) {
      if (change.kind !== 'EndpointSlice') return undefined;
      const slice = snapshot.endpointSlices.get(change.key);
      const now = slice === undefined ? undefined : serviceOf(slice);
      const before = s.sliceService.get(change.key);
      moves.push([change.key, now]);
      if (before !== undefined) services.add(before);
      if (now !== undefined) services.add(now);
    }
    s.backends.begin(snapshot, options);
    const updates: EndpointUpdate[] = [];
    for (const service of services) {
      const moved = s.backends.recheck(service);
      // Something a problem or a route says changed: translate (the resolver keeps what it
      // computed, and the readers, which hold the older results, are built again).
      if (moved === 'structural') return undefined;
      for (const update of moved) updates.push(update);
    }
    for (const [key, service] of moves) {
      if (service === undefined) s.sliceService.delete(key);
      else s.sliceService.set(key, service);
    }
    for (const [key, addresses] of updates) s.tracked.set(key, addresses!);
    return updates;
  };

  return Object.assign(translator, {
    endpoints,
    takeEndpointUpdates(): EndpointUpdate[] {
      const s = state;
      if (s === undefined || s.endpointUpdates.length === 0) return [];
      const out = s.endpointUpdates;
      s.endpointUpdates = [];
      return out;
    },
    trackedEndpoints(): EndpointUpdate[] {
      return state === undefined ? [] : [...state.tracked];
    },
    ingressesTranslated: () => ingressesTranslated,
    ingressesChecked: () => ingressesChecked,
    gatewayRoutesTranslated: () => gatewayRoutesTranslated,
    addressesOf(backend: { readonly key: string; readonly addresses: readonly UpstreamAddress[]; readonly error?: string }): readonly UpstreamAddress[] {
      if (backend.error !== undefined) return backend.addresses;
      return state?.tracked.get(backend.key) ?? backend.addresses;
    },
  });
}

/**
 * After a translation, the tracked backends of the Services it read again (`touched`;
 * undefined: all) are what the resolver says now: their routes were translated again,
 * so a backend no route reads is no longer tracked.
 */
function refreshTracked(s: TranslatorState, touched: ReadonlySet<string> | undefined): void {
  for (const [key, addresses] of s.tracked) {
    const colon = key.lastIndexOf(':');
    const service = key.slice(0, colon);
    if (touched !== undefined && !touched.has(service)) continue;
    const now = s.backends.current(service, key.slice(colon + 1));
    if (now === undefined || now.config.error !== undefined) {
      s.tracked.delete(key);
      s.endpointUpdates.push([key, null]);
    } else if (now.config.addresses !== addresses) {
      s.tracked.set(key, now.config.addresses);
      s.endpointUpdates.push([key, now.config.addresses]);
    }
  }
}

/** Gateway API output, with the Service and Secret keys it read (a change to one of them translates it again). */
function translateGateway(
  s: TranslatorState,
  snapshot: Snapshot,
  options: TranslateOptions,
  reuse: GatewayApiDeps['reuse'],
  /** What changed, when the previous output may be patched ("<kind>:<key>" for Gateway API objects, "ns/name" for Services and Secrets). */
  touched: ReadonlySet<string> | undefined,
  /** A Gateway, class, grant, namespace or certificate changed (not only routes and Services). */
  structural: boolean,
): NonNullable<TranslatorState['gateway']> {
  const deps: GatewayApiDeps = {
    backends: s.backends,
    secrets: s.secrets,
    controllerName: options.gatewayControllerName,
    reservedPorts: options.ingressPorts ?? new Map(),
    reuse,
  };
  const previous = s.gateway;
  if (touched !== undefined && previous !== undefined) {
    // The routes that changed, and those reading a Service that did: only they are translated.
    const redo = new Set<string>();
    for (const key of touched) {
      if (ROUTE_CHANGE.test(key)) redo.add(key);
      else for (const reader of previous.output.readers.get(key) ?? []) redo.add(reader);
    }
    const side = { grantNamespaces: new Set<string>(), namespaces: new Set<string>() };
    for (const key of touched) {
      if (key.startsWith('ReferenceGrant:')) side.grantNamespaces.add(key.slice('ReferenceGrant:'.length, key.indexOf('/')));
      else if (key.startsWith('Namespace:')) side.namespaces.add(key.slice('Namespace:'.length));
    }
    const output = updateGatewayApi(snapshot, deps, previous.output, redo, side);
    if (output !== undefined) return { output, certificateReads: structural ? certificateReadsOf(snapshot) : previous.certificateReads };
  }
  // Every route attached again: an unchanged route keeps its fragment only when it comes out the same.
  const output = translateGatewayApi(snapshot, { ...deps, ...(structural ? { reuse: undefined } : {}), previous: previous?.output.fragments });
  return { output, certificateReads: certificateReadsOf(snapshot) };
}

/** The certificate Secrets ("ns/name") Gateway listeners read. */
function certificateReadsOf(snapshot: Snapshot): Set<string> {
  const certificateReads = new Set<string>();
  for (const gw of snapshot.gateways.values()) {
    for (const l of gw.spec?.listeners ?? []) {
      for (const ref of l.tls?.certificateRefs ?? []) certificateReads.add(`${ref.namespace ?? gw.metadata.namespace ?? 'default'}/${ref.name}`);
    }
  }
  return certificateReads;
}

/** The Gateway routes whose RouteConfigs are not the very objects of before (and those gone). */
function changedSources(before: ReadonlyMap<string, readonly RouteConfig[]> | undefined, now: ReadonlyMap<string, readonly RouteConfig[]> | undefined): Set<string> {
  const empty: ReadonlyMap<string, readonly RouteConfig[]> = new Map();
  return new Set(changedKeys(now ?? empty, before ?? empty, sameItems));
}

/**
 * The same routing: the same object, or the same spec, annotations, generation and
 * creation time, so a status write (which changes the object, not what routing reads)
 * does not translate the route again.
 */
function sameRouting(a: HTTPRoute | GRPCRoute, b: HTTPRoute | GRPCRoute): boolean {
  if (a === b) return true;
  const x = a.metadata;
  const y = b.metadata;
  return x.generation === y.generation && x.creationTimestamp === y.creationTimestamp && deepEqual(x.annotations, y.annotations) && deepEqual(a.spec, b.spec);
}

function indexReads(s: TranslatorState, key: string, entry: IngressEntry): void {
  for (const dep of entry.backendDeps) if (dep.result.serviceKey !== undefined) addReader(s, dep.result.serviceKey, key);
  for (const dep of entry.secretDeps) addReader(s, dep.key, key);
}

function unindexReads(s: TranslatorState, key: string, entry: IngressEntry): void {
  for (const dep of entry.backendDeps) if (dep.result.serviceKey !== undefined) removeReader(s, dep.result.serviceKey, key);
  for (const dep of entry.secretDeps) removeReader(s, dep.key, key);
}

function addReader(s: TranslatorState, read: string, key: string): void {
  s.readers.add(read, key);
}

function removeReader(s: TranslatorState, read: string, key: string): void {
  s.readers.delete(read, key);
}

function ignoredEntry(state: TranslatorState, key: string, ingress: Ingress, classes: ClassSelection): IgnoredIngress {
  const known = state.ignoredReasons.get(ingress);
  if (known !== undefined && known.classes === classes.signature) return known.entry;
  const missingClass = classes.missingClass(ingress);
  const entry: IgnoredIngress = { ingress: key, reason: classes.ignoredReason(ingress), ...(missingClass !== undefined ? { missingClass } : {}) };
  state.ignoredReasons.set(ingress, { classes: classes.signature, entry });
  return entry;
}

function sameSet(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  if (a.size !== b.size) return false;
  for (const x of a) if (!b.has(x)) return false;
  return true;
}

function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

const NO_PROBLEMS: readonly Problem[] = [];

function addDelta(into: ProblemChanges, delta: ProblemDelta): void {
  for (const p of delta.added) into.added.push(p);
  for (const p of delta.removed) into.removed.push(p);
}

/**
 * How the Gateway API problems differ from `before` to `now`: the Gateways' pass (a few
 * objects) and the routes the update named; every problem when the output was made anew.
 */
function gatewayProblemDelta(before: GatewayApiOutput | undefined, now: GatewayApiOutput | undefined, into: ProblemChanges): void {
  if (before !== undefined && now?.changedSources !== undefined) {
    diffProblems(before.state.passProblems, now.state.passProblems, into);
    for (const sourceKey of now.changedSources) {
      // "HTTPRoute/ns/name" -> "HTTPRoute:ns/name", the key of its fragment
      const fragmentKey = sourceKey.replace('/', ':');
      diffProblems(before.state.routeProblems.get(fragmentKey) ?? NO_PROBLEMS, now.state.routeProblems.get(fragmentKey) ?? NO_PROBLEMS, into);
    }
    return;
  }
  diffProblems(before?.problems ?? NO_PROBLEMS, now?.problems ?? NO_PROBLEMS, into);
}

function compareProblemObjects(a: Problem, b: Problem): number {
  return (
    compareStrings(a.object.kind, b.object.kind) ||
    compareStrings(a.object.namespace ?? '', b.object.namespace ?? '') ||
    compareStrings(a.object.name, b.object.name)
  );
}
