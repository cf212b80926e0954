// Wire JSON -> trimmed, validated Gateway API objects (gateway.networking.k8s.io). The
// same rules as sanitize.ts: only the fields translation and status read survive, and
// a wrong type is one error naming the field. Shared readers come from sanitize-json.ts.
import type {
  BackendObjectReference,
  Condition,
  Gateway,
  GatewayClass,
  GRPCRoute,
  GRPCRouteMatch,
  GRPCRouteRule,
  GatewayListener,
  HTTPBackendRef,
  HTTPHeaderFilter,
  HTTPPathModifier,
  HTTPRoute,
  HTTPRouteFilter,
  HTTPRouteMatch,
  HTTPRouteRule,
  LabelSelector,
  Namespace,
  ObjectMeta,
  ParentReference,
  ReferenceGrant,
  RouteParentStatus,
} from '../model/k8s.ts';
import { compact, fail, optArray, optInt, optObject, optPort, optString, optStringList, optStringMap, reqObject, reqPort, reqString, type Json } from './sanitize-json.ts';

function list<T>(v: unknown, field: string, item: (raw: unknown, field: string) => T): T[] | undefined {
  return optArray(v, field)?.map((x, i) => item(x, `${field}[${i}]`));
}

function objectRef(raw: unknown, field: string): BackendObjectReference {
  const o = reqObject(raw, field);
  return compact<BackendObjectReference>({
    group: optString(o.group, `${field}.group`),
    kind: optString(o.kind, `${field}.kind`),
    name: reqString(o.name, `${field}.name`),
    namespace: optString(o.namespace, `${field}.namespace`),
    port: optPort(o.port, `${field}.port`),
  });
}

function conditions(v: unknown, field: string): Condition[] | undefined {
  return list(v, field, (raw, f) => {
    const c = reqObject(raw, f);
    return compact<Condition>({
      type: reqString(c.type, `${f}.type`),
      status: reqString(c.status, `${f}.status`) as Condition['status'],
      reason: optString(c.reason, `${f}.reason`) ?? '',
      message: optString(c.message, `${f}.message`),
      observedGeneration: optInt(c.observedGeneration, `${f}.observedGeneration`),
      lastTransitionTime: optString(c.lastTransitionTime, `${f}.lastTransitionTime`),
    });
  });
}

function labelSelector(raw: unknown, field: string): LabelSelector | undefined {
  const o = optObject(raw, field);
  if (!o) return undefined;
  return compact<LabelSelector>({
    matchLabels: optStringMap(o.matchLabels, `${field}.matchLabels`),
    matchExpressions: list(o.matchExpressions, `${field}.matchExpressions`, (x, f) => {
      const e = reqObject(x, f);
      const operator = reqString(e.operator, `${f}.operator`);
      if (!['In', 'NotIn', 'Exists', 'DoesNotExist'].includes(operator)) fail(`${f}.operator`, 'must be In, NotIn, Exists or DoesNotExist');
      return compact({ key: reqString(e.key, `${f}.key`), operator: operator as 'In', values: optStringList(e.values, `${f}.values`) });
    }),
  });
}

export function sanitizeGatewayClass(o: Json, metadata: ObjectMeta): GatewayClass {
  const spec = optObject(o.spec, 'spec');
  const status = optObject(o.status, 'status');
  return compact<GatewayClass>({
    apiVersion: String(o.apiVersion),
    kind: 'GatewayClass',
    metadata,
    spec: spec && compact({ controllerName: optString(spec.controllerName, 'spec.controllerName'), description: optString(spec.description, 'spec.description') }),
    status: status && compact({ conditions: conditions(status.conditions, 'status.conditions') }),
  });
}

function listener(raw: unknown, field: string): GatewayListener {
  const l = reqObject(raw, field);
  const tls = optObject(l.tls, `${field}.tls`);
  const allowed = optObject(l.allowedRoutes, `${field}.allowedRoutes`);
  const namespaces = allowed && optObject(allowed.namespaces, `${field}.allowedRoutes.namespaces`);
  const from = namespaces && optString(namespaces.from, `${field}.allowedRoutes.namespaces.from`);
  if (from !== undefined && !['All', 'Same', 'Selector'].includes(from)) fail(`${field}.allowedRoutes.namespaces.from`, 'must be All, Same or Selector');
  const mode = tls && optString(tls.mode, `${field}.tls.mode`);
  return compact<GatewayListener>({
    name: reqString(l.name, `${field}.name`),
    hostname: optString(l.hostname, `${field}.hostname`),
    port: reqPort(l.port, `${field}.port`),
    protocol: reqString(l.protocol, `${field}.protocol`),
    tls: tls && compact({ mode: mode as 'Terminate' | undefined, certificateRefs: list(tls.certificateRefs, `${field}.tls.certificateRefs`, objectRef) }),
    allowedRoutes:
      allowed &&
      compact({
        namespaces: namespaces && compact({ from: from as 'All' | undefined, selector: labelSelector(namespaces.selector, `${field}.allowedRoutes.namespaces.selector`) }),
        kinds: list(allowed.kinds, `${field}.allowedRoutes.kinds`, (x, f) => {
          const k = reqObject(x, f);
          return compact({ group: optString(k.group, `${f}.group`), kind: reqString(k.kind, `${f}.kind`) });
        }),
      }),
  });
}

export function sanitizeGateway(o: Json, metadata: ObjectMeta): Gateway {
  const spec = optObject(o.spec, 'spec');
  const status = optObject(o.status, 'status');
  return compact<Gateway>({
    apiVersion: String(o.apiVersion),
    kind: 'Gateway',
    metadata,
    spec:
      spec &&
      compact({
        gatewayClassName: optString(spec.gatewayClassName, 'spec.gatewayClassName'),
        listeners: list(spec.listeners, 'spec.listeners', listener),
      }),
    status:
      status &&
      compact({
        addresses: list(status.addresses, 'status.addresses', (x, f) => {
          const a = reqObject(x, f);
          return compact({ type: optString(a.type, `${f}.type`), value: reqString(a.value, `${f}.value`) });
        }),
        conditions: conditions(status.conditions, 'status.conditions'),
        listeners: list(status.listeners, 'status.listeners', (x, f) => {
          const s = reqObject(x, f);
          return {
            name: reqString(s.name, `${f}.name`),
            supportedKinds: list(s.supportedKinds, `${f}.supportedKinds`, (k, kf) => {
              const kk = reqObject(k, kf);
              return compact({ group: optString(kk.group, `${kf}.group`), kind: reqString(kk.kind, `${kf}.kind`) });
            }) ?? [],
            attachedRoutes: optInt(s.attachedRoutes, `${f}.attachedRoutes`) ?? 0,
            conditions: conditions(s.conditions, `${f}.conditions`) ?? [],
          };
        }),
      }),
  });
}

function parentRef(raw: unknown, field: string): ParentReference {
  const p = reqObject(raw, field);
  return compact<ParentReference>({
    group: optString(p.group, `${field}.group`),
    kind: optString(p.kind, `${field}.kind`),
    namespace: optString(p.namespace, `${field}.namespace`),
    name: reqString(p.name, `${field}.name`),
    sectionName: optString(p.sectionName, `${field}.sectionName`),
    port: optPort(p.port, `${field}.port`),
  });
}

function headerFilter(raw: unknown, field: string): HTTPHeaderFilter | undefined {
  const h = optObject(raw, field);
  if (!h) return undefined;
  const headers = (v: unknown, f: string) =>
    list(v, f, (x, ff) => {
      const e = reqObject(x, ff);
      return { name: reqString(e.name, `${ff}.name`), value: optString(e.value, `${ff}.value`) ?? '' };
    });
  return compact<HTTPHeaderFilter>({ set: headers(h.set, `${field}.set`), add: headers(h.add, `${field}.add`), remove: optStringList(h.remove, `${field}.remove`) });
}

function pathModifier(raw: unknown, field: string): HTTPPathModifier | undefined {
  const p = optObject(raw, field);
  if (!p) return undefined;
  return compact<HTTPPathModifier>({
    type: reqString(p.type, `${field}.type`) as HTTPPathModifier['type'],
    replaceFullPath: optString(p.replaceFullPath, `${field}.replaceFullPath`),
    replacePrefixMatch: optString(p.replacePrefixMatch, `${field}.replacePrefixMatch`),
  });
}

function filter(raw: unknown, field: string): HTTPRouteFilter {
  const f = reqObject(raw, field);
  const redirect = optObject(f.requestRedirect, `${field}.requestRedirect`);
  const rewrite = optObject(f.urlRewrite, `${field}.urlRewrite`);
  const mirror = optObject(f.requestMirror, `${field}.requestMirror`);
  const ext = optObject(f.extensionRef, `${field}.extensionRef`);
  const fraction = mirror && optObject(mirror.fraction, `${field}.requestMirror.fraction`);
  return compact<HTTPRouteFilter>({
    type: reqString(f.type, `${field}.type`),
    requestHeaderModifier: headerFilter(f.requestHeaderModifier, `${field}.requestHeaderModifier`),
    responseHeaderModifier: headerFilter(f.responseHeaderModifier, `${field}.responseHeaderModifier`),
    requestRedirect:
      redirect &&
      compact({
        scheme: optString(redirect.scheme, `${field}.requestRedirect.scheme`),
        hostname: optString(redirect.hostname, `${field}.requestRedirect.hostname`),
        path: pathModifier(redirect.path, `${field}.requestRedirect.path`),
        port: optPort(redirect.port, `${field}.requestRedirect.port`),
        statusCode: optInt(redirect.statusCode, `${field}.requestRedirect.statusCode`),
      }),
    urlRewrite: rewrite && compact({ hostname: optString(rewrite.hostname, `${field}.urlRewrite.hostname`), path: pathModifier(rewrite.path, `${field}.urlRewrite.path`) }),
    requestMirror:
      mirror &&
      compact({
        backendRef: objectRef(mirror.backendRef, `${field}.requestMirror.backendRef`),
        percent: optInt(mirror.percent, `${field}.requestMirror.percent`),
        fraction: fraction && compact({ numerator: optInt(fraction.numerator, `${field}.requestMirror.fraction.numerator`) ?? 0, denominator: optInt(fraction.denominator, `${field}.requestMirror.fraction.denominator`) }),
      }),
    extensionRef: ext && { group: optString(ext.group, `${field}.extensionRef.group`) ?? '', kind: reqString(ext.kind, `${field}.extensionRef.kind`), name: reqString(ext.name, `${field}.extensionRef.name`) },
  });
}

function valueMatches(v: unknown, f: string): { type?: 'Exact' | 'RegularExpression'; name: string; value: string }[] | undefined {
  return list(v, f, (x, ff) => {
    const e = reqObject(x, ff);
    return compact({ type: optString(e.type, `${ff}.type`) as 'Exact' | undefined, name: reqString(e.name, `${ff}.name`), value: optString(e.value, `${ff}.value`) ?? '' });
  });
}

function match(raw: unknown, field: string): HTTPRouteMatch {
  const m = reqObject(raw, field);
  const path = optObject(m.path, `${field}.path`);
  const values = valueMatches;
  return compact<HTTPRouteMatch>({
    path: path && compact({ type: optString(path.type, `${field}.path.type`) as 'Exact' | undefined, value: optString(path.value, `${field}.path.value`) }),
    headers: values(m.headers, `${field}.headers`),
    queryParams: values(m.queryParams, `${field}.queryParams`),
    method: optString(m.method, `${field}.method`),
  });
}

function backendRef(raw: unknown, field: string): HTTPBackendRef {
  const b = reqObject(raw, field);
  const weight = optInt(b.weight, `${field}.weight`);
  if (weight !== undefined && (weight < 0 || weight > 1_000_000)) fail(`${field}.weight`, 'must be between 0 and 1000000');
  return compact<HTTPBackendRef>({ ...objectRef(b, field), weight, filters: list(b.filters, `${field}.filters`, filter) });
}

function rule(raw: unknown, field: string): HTTPRouteRule {
  const r = reqObject(raw, field);
  const timeouts = optObject(r.timeouts, `${field}.timeouts`);
  return compact<HTTPRouteRule>({
    name: optString(r.name, `${field}.name`),
    matches: list(r.matches, `${field}.matches`, match),
    filters: list(r.filters, `${field}.filters`, filter),
    backendRefs: list(r.backendRefs, `${field}.backendRefs`, backendRef),
    timeouts: timeouts && compact({ request: optString(timeouts.request, `${field}.timeouts.request`), backendRequest: optString(timeouts.backendRequest, `${field}.timeouts.backendRequest`) }),
  });
}

function routeStatus(raw: unknown): { parents?: RouteParentStatus[] } | undefined {
  const status = optObject(raw, 'status');
  return (
    status &&
    compact({
      parents: list(status.parents, 'status.parents', (x, f): RouteParentStatus => {
        const p = reqObject(x, f);
        return { parentRef: parentRef(p.parentRef, `${f}.parentRef`), controllerName: reqString(p.controllerName, `${f}.controllerName`), conditions: conditions(p.conditions, `${f}.conditions`) ?? [] };
      }),
    })
  );
}

export function sanitizeHTTPRoute(o: Json, metadata: ObjectMeta): HTTPRoute {
  const spec = optObject(o.spec, 'spec');
  return compact<HTTPRoute>({
    apiVersion: String(o.apiVersion),
    kind: 'HTTPRoute',
    metadata,
    spec:
      spec &&
      compact({
        parentRefs: list(spec.parentRefs, 'spec.parentRefs', parentRef),
        hostnames: optStringList(spec.hostnames, 'spec.hostnames'),
        rules: list(spec.rules, 'spec.rules', rule),
      }),
    status: routeStatus(o.status),
  });
}

function grpcMatch(raw: unknown, field: string): GRPCRouteMatch {
  const m = reqObject(raw, field);
  const method = optObject(m.method, `${field}.method`);
  return compact<GRPCRouteMatch>({
    method:
      method &&
      compact({
        type: optString(method.type, `${field}.method.type`) as 'Exact' | undefined,
        service: optString(method.service, `${field}.method.service`),
        method: optString(method.method, `${field}.method.method`),
      }),
    headers: valueMatches(m.headers, `${field}.headers`),
  });
}

function grpcRule(raw: unknown, field: string): GRPCRouteRule {
  const r = reqObject(raw, field);
  return compact<GRPCRouteRule>({
    name: optString(r.name, `${field}.name`),
    matches: list(r.matches, `${field}.matches`, grpcMatch),
    filters: list(r.filters, `${field}.filters`, filter),
    backendRefs: list(r.backendRefs, `${field}.backendRefs`, backendRef),
  });
}

export function sanitizeGRPCRoute(o: Json, metadata: ObjectMeta): GRPCRoute {
  const spec = optObject(o.spec, 'spec');
  return compact<GRPCRoute>({
    apiVersion: String(o.apiVersion),
    kind: 'GRPCRoute',
    metadata,
    spec:
      spec &&
      compact({
        parentRefs: list(spec.parentRefs, 'spec.parentRefs', parentRef),
        hostnames: optStringList(spec.hostnames, 'spec.hostnames'),
        rules: list(spec.rules, 'spec.rules', grpcRule),
      }),
    status: routeStatus(o.status),
  });
}

export function sanitizeReferenceGrant(o: Json, metadata: ObjectMeta): ReferenceGrant {
  const spec = optObject(o.spec, 'spec');
  return compact<ReferenceGrant>({
    apiVersion: String(o.apiVersion),
    kind: 'ReferenceGrant',
    metadata,
    spec:
      spec &&
      compact({
        from: list(spec.from, 'spec.from', (x, f) => {
          const e = reqObject(x, f);
          return { group: optString(e.group, `${f}.group`) ?? '', kind: reqString(e.kind, `${f}.kind`), namespace: reqString(e.namespace, `${f}.namespace`) };
        }),
        to: list(spec.to, 'spec.to', (x, f) => {
          const e = reqObject(x, f);
          return compact({ group: optString(e.group, `${f}.group`) ?? '', kind: reqString(e.kind, `${f}.kind`), name: optString(e.name, `${f}.name`) });
        }),
      }),
  });
}

export function sanitizeNamespace(o: Json, metadata: ObjectMeta): Namespace {
  return { apiVersion: 'v1', kind: 'Namespace', metadata: compact({ name: metadata.name, labels: metadata.labels, resourceVersion: metadata.resourceVersion }) };
}
