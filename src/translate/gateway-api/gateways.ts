// GatewayClasses and Gateways -> the listeners portico binds, with the conditions the
// spec asks for on each. Routes attach afterwards (httproutes.ts) and count into
// `attached`; gatewayStatusOf() then writes the Gateway's status.
import type { CertificateConfig, Problem, Snapshot } from '../../model/config.ts';
import {
  GATEWAY_GROUP,
  NAMESPACE_NAME_LABEL,
  type Condition,
  type Gateway,
  type GatewayListener,
  type ListenerStatus,
  type RouteGroupKind,
} from '../../model/k8s.ts';
import type { SecretParser } from '../tls.ts';
import { compareStrings, condition, createdAt } from './conditions.ts';
import { selectorMatches } from './label-selector.ts';
import type { ReferenceGrants } from './reference-grants.ts';

export const HTTPROUTE_KIND: RouteGroupKind = { group: GATEWAY_GROUP, kind: 'HTTPRoute' };
export const GRPCROUTE_KIND: RouteGroupKind = { group: GATEWAY_GROUP, kind: 'GRPCRoute' };
/** The route kinds HTTP and HTTPS listeners serve. */
const ROUTE_KINDS: readonly RouteGroupKind[] = [HTTPROUTE_KIND, GRPCROUTE_KIND];

export interface ListenerInfo {
  readonly gatewayKey: string;
  readonly gateway: Gateway;
  readonly spec: GatewayListener;
  readonly index: number;
  readonly protocol: 'HTTP' | 'HTTPS' | undefined;
  /** Lowercase; "" when the listener has none. */
  readonly hostname: string;
  readonly supportedKinds: RouteGroupKind[];
  readonly certificate: CertificateConfig | undefined;
  /** Routes may attach (accepted, not conflicted, references resolved). */
  ready: boolean;
  attached: number;
  readonly conditions: { accepted?: Condition; resolvedRefs?: Condition; conflicted?: Condition };
}

export interface GatewayInfo {
  readonly key: string;
  readonly gateway: Gateway;
  readonly listeners: ListenerInfo[];
}

export interface GatewayPass {
  readonly classes: Map<string, { generation?: number; conditions: Condition[] }>;
  /** Our Gateways, oldest first. */
  readonly gateways: Map<string, GatewayInfo>;
  readonly problems: Problem[];
}

export interface GatewayDeps {
  readonly snapshot: Snapshot;
  readonly controllerName: string;
  readonly grants: ReferenceGrants;
  readonly secrets: SecretParser;
  /** Ports portico's Ingress listeners hold, and the flag that holds each. */
  readonly reservedPorts: ReadonlyMap<number, string>;
}

export function translateGateways(deps: GatewayDeps): GatewayPass {
  const { snapshot, controllerName } = deps;
  const classes = new Map<string, { generation?: number; conditions: Condition[] }>();
  for (const [key, gc] of snapshot.gatewayClasses) {
    if (gc.spec?.controllerName !== controllerName) continue;
    const generation = gc.metadata.generation;
    classes.set(key, { generation, conditions: [condition('Accepted', true, 'Accepted', 'portico serves this class', generation)] });
  }

  const ours = [...snapshot.gateways.entries()]
    .filter(([, g]) => g.spec?.gatewayClassName !== undefined && classes.has(g.spec.gatewayClassName))
    .sort(([ka, a], [kb, b]) => compareStrings(createdAt(a.metadata), createdAt(b.metadata)) || compareStrings(ka, kb));

  const problems: Problem[] = [];
  const gateways = new Map<string, GatewayInfo>();
  /** The protocol and hostnames each port serves, first claim wins. */
  const ports = new Map<number, { protocol: string; hostnames: Set<string> }>();
  for (const [key, gateway] of ours) {
    const listeners = (gateway.spec?.listeners ?? []).map((spec, index) => listenerInfo(deps, key, gateway, spec, index, problems));
    for (const l of listeners) {
      if (l.conditions.accepted?.status === 'False') continue;
      const generation = gateway.metadata.generation;
      const claim = ports.get(l.spec.port);
      if (claim === undefined) {
        ports.set(l.spec.port, { protocol: l.protocol!, hostnames: new Set([l.hostname]) });
      } else if (claim.protocol !== l.protocol) {
        l.conditions.conflicted = condition('Conflicted', true, 'ProtocolConflict', `port ${l.spec.port} is already served with protocol ${claim.protocol}`, generation);
      } else if (claim.hostnames.has(l.hostname)) {
        const what = l.hostname === '' ? 'without hostname' : `for hostname ${l.hostname}`;
        l.conditions.conflicted = condition('Conflicted', true, 'HostnameConflict', `port ${l.spec.port} already has a listener ${what}`, generation);
      } else {
        claim.hostnames.add(l.hostname);
      }
      l.conditions.conflicted ??= condition('Conflicted', false, 'NoConflicts', 'no conflicts', generation);
      // An unsupported route kind beside HTTPRoute leaves the listener serving HTTPRoutes
      // (ResolvedRefs: False, InvalidRouteKinds); an HTTPS listener without a usable
      // certificate does not serve.
      l.ready = l.conditions.conflicted.status === 'False' && (l.protocol !== 'HTTPS' || l.certificate !== undefined) && l.supportedKinds.length > 0;
    }
    gateways.set(key, { key, gateway, listeners });
  }
  return { classes, gateways, problems };
}

function listenerInfo(deps: GatewayDeps, gatewayKey: string, gateway: Gateway, spec: GatewayListener, index: number, problems: Problem[]): ListenerInfo {
  const generation = gateway.metadata.generation;
  const namespace = gateway.metadata.namespace ?? 'default';
  const conditions: ListenerInfo['conditions'] = {};
  const protocol = spec.protocol === 'HTTP' || spec.protocol === 'HTTPS' ? spec.protocol : undefined;
  const field = `spec.listeners[${index}]`;
  const report = (reason: string, message: string) =>
    problems.push({ object: { kind: 'Gateway', namespace, name: gateway.metadata.name }, severity: 'error', reason, message: `${field} (${spec.name}): ${message}` });

  if (protocol === undefined) {
    conditions.accepted = condition('Accepted', false, 'UnsupportedProtocol', `protocol ${spec.protocol} is not supported; portico serves HTTP and HTTPS`, generation);
  } else if (deps.reservedPorts.has(spec.port)) {
    const flag = deps.reservedPorts.get(spec.port)!;
    conditions.accepted = condition('Accepted', false, 'PortUnavailable', `port ${spec.port} is taken by portico's own listener (${flag})`, generation);
  } else if (protocol === 'HTTPS' && (spec.tls?.mode ?? 'Terminate') !== 'Terminate') {
    conditions.accepted = condition('Accepted', false, 'UnsupportedProtocol', `tls.mode ${spec.tls?.mode} is not supported on HTTPS listeners; use Terminate`, generation);
  }
  if (conditions.accepted !== undefined) report(conditions.accepted.reason, conditions.accepted.message!);
  conditions.accepted ??= condition('Accepted', true, 'Accepted', 'listener accepted', generation);

  // Route kinds: HTTPRoute and GRPCRoute.
  const supportedKinds: RouteGroupKind[] = [];
  let badKind: string | undefined;
  const kinds = spec.allowedRoutes?.kinds;
  if (kinds === undefined || kinds.length === 0) {
    if (protocol !== undefined) supportedKinds.push(...ROUTE_KINDS);
  } else {
    for (const k of kinds) {
      const known = (k.group ?? GATEWAY_GROUP) === GATEWAY_GROUP ? ROUTE_KINDS.find((r) => r.kind === k.kind) : undefined;
      if (known === undefined) badKind ??= `${k.group ?? GATEWAY_GROUP}/${k.kind}`;
      else if (!supportedKinds.includes(known)) supportedKinds.push(known);
    }
  }
  if (badKind !== undefined) {
    conditions.resolvedRefs = condition('ResolvedRefs', false, 'InvalidRouteKinds', `route kind ${badKind} is not supported; portico serves HTTPRoute and GRPCRoute`, generation);
  }

  let certificate: CertificateConfig | undefined;
  if (protocol === 'HTTPS' && conditions.accepted.status === 'True') {
    const result = resolveCertificate(deps, gateway, spec);
    if ('certificate' in result) certificate = result.certificate;
    else {
      conditions.resolvedRefs = condition('ResolvedRefs', false, result.reason, result.message, generation);
      report(result.reason, result.message);
    }
  }
  conditions.resolvedRefs ??= condition('ResolvedRefs', true, 'ResolvedRefs', 'all references resolved', generation);

  return {
    gatewayKey,
    gateway,
    spec,
    index,
    protocol,
    hostname: spec.hostname?.toLowerCase() ?? '',
    supportedKinds,
    certificate,
    ready: false,
    attached: 0,
    conditions,
  };
}

function resolveCertificate(
  deps: GatewayDeps,
  gateway: Gateway,
  spec: GatewayListener,
): { certificate: CertificateConfig } | { reason: string; message: string } {
  const namespace = gateway.metadata.namespace ?? 'default';
  const refs = spec.tls?.certificateRefs ?? [];
  if (refs.length === 0) return { reason: 'InvalidCertificateRef', message: 'an HTTPS listener needs tls.certificateRefs' };
  let failure: { reason: string; message: string } | undefined;
  for (const ref of refs) {
    const group = ref.group ?? '';
    const kind = ref.kind ?? 'Secret';
    const ns = ref.namespace ?? namespace;
    if (group !== '' || kind !== 'Secret') {
      failure ??= { reason: 'InvalidCertificateRef', message: `certificateRef ${kind} ${ref.name}: only core Secrets are supported` };
      continue;
    }
    if (!deps.grants.permits({ group: GATEWAY_GROUP, kind: 'Gateway', namespace }, { group: '', kind: 'Secret', namespace: ns, name: ref.name })) {
      failure ??= { reason: 'RefNotPermitted', message: `certificateRef Secret ${ns}/${ref.name} is in another namespace and no ReferenceGrant there allows it` };
      continue;
    }
    const secret = deps.snapshot.secrets.get(`${ns}/${ref.name}`);
    if (secret === undefined) {
      failure ??= { reason: 'InvalidCertificateRef', message: `certificateRef Secret ${ns}/${ref.name} not found` };
      continue;
    }
    const parsed = deps.secrets.parse(secret);
    if (!parsed.ok) {
      failure ??= { reason: 'InvalidCertificateRef', message: parsed.error };
      continue;
    }
    return { certificate: parsed.certificate };
  }
  return failure!;
}

/** Whether routes of `namespace` may attach to this listener (allowedRoutes.namespaces). */
export function namespaceAllowed(listener: ListenerInfo, namespace: string, snapshot: Snapshot): boolean {
  const from = listener.spec.allowedRoutes?.namespaces?.from ?? 'Same';
  if (from === 'All') return true;
  if (from === 'Same') return namespace === (listener.gateway.metadata.namespace ?? 'default');
  const selector = listener.spec.allowedRoutes?.namespaces?.selector;
  if (selector === undefined) return false;
  const labels = snapshot.namespaces.get(namespace)?.metadata.labels ?? {};
  return selectorMatches(selector, { [NAMESPACE_NAME_LABEL]: namespace, ...labels });
}

export function gatewayStatusOf(info: GatewayInfo): { generation?: number; conditions: Condition[]; listeners: ListenerStatus[] } {
  const generation = info.gateway.metadata.generation;
  const listeners: ListenerStatus[] = info.listeners.map((l) => {
    const programmed = l.ready;
    return {
      name: l.spec.name,
      supportedKinds: l.supportedKinds,
      attachedRoutes: l.attached,
      conditions: [
        l.conditions.accepted!,
        condition('Programmed', programmed, programmed ? 'Programmed' : 'Invalid', programmed ? 'listener is serving' : 'listener is not serving (see its other conditions)', generation),
        l.conditions.resolvedRefs!,
        l.conditions.conflicted ?? condition('Conflicted', false, 'NoConflicts', 'no conflicts', generation),
      ],
    };
  });
  const anyReady = info.listeners.some((l) => l.ready);
  const allValid = info.listeners.every((l) => l.conditions.accepted!.status === 'True');
  return {
    generation,
    conditions: [
      condition('Accepted', anyReady || info.listeners.length === 0 || allValid, allValid ? 'Accepted' : 'ListenersNotValid', allValid ? 'Gateway accepted' : 'some listeners are not valid (see their conditions)', generation),
      condition('Programmed', anyReady, anyReady ? 'Programmed' : 'Invalid', anyReady ? 'Gateway is serving' : 'no listener is serving', generation),
    ],
    listeners,
  };
}
