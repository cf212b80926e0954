// Literal Gateway API objects for translation tests.
import type { Gateway, GatewayClass, GatewayListener, GRPCRoute, GRPCRouteRule, HTTPRoute, HTTPRouteRule, ParentReference, ReferenceGrant } from '../../../src/model/k8s.ts';

const V1 = 'gateway.networking.k8s.io/v1';

export function gatewayClass(name = 'portico', controllerName = 'portico.dev/gateway-controller'): GatewayClass {
  return { apiVersion: V1, kind: 'GatewayClass', metadata: { name, generation: 1 }, spec: { controllerName } };
}

export function gateway(name: string, listeners: GatewayListener[], opts: { namespace?: string; className?: string; created?: string } = {}): Gateway {
  return {
    apiVersion: V1,
    kind: 'Gateway',
    metadata: { name, namespace: opts.namespace ?? 'default', generation: 2, ...(opts.created ? { creationTimestamp: opts.created } : {}) },
    spec: { gatewayClassName: opts.className ?? 'portico', listeners },
  };
}

export function http(name: string, port: number, extra: Partial<GatewayListener> = {}): GatewayListener {
  return { name, port, protocol: 'HTTP', ...extra };
}

export function httpRoute(
  name: string,
  parentRefs: ParentReference[],
  rules: HTTPRouteRule[],
  opts: { namespace?: string; hostnames?: string[]; created?: string; annotations?: Record<string, string> } = {},
): HTTPRoute {
  return {
    apiVersion: V1,
    kind: 'HTTPRoute',
    metadata: {
      name,
      namespace: opts.namespace ?? 'default',
      generation: 3,
      ...(opts.created ? { creationTimestamp: opts.created } : {}),
      ...(opts.annotations ? { annotations: opts.annotations } : {}),
    },
    spec: { parentRefs, ...(opts.hostnames ? { hostnames: opts.hostnames } : {}), rules },
  };
}

export function grpcRoute(
  name: string,
  parentRefs: ParentReference[],
  rules: GRPCRouteRule[],
  opts: { namespace?: string; hostnames?: string[]; created?: string; annotations?: Record<string, string> } = {},
): GRPCRoute {
  return { ...httpRoute(name, parentRefs, [], opts), kind: 'GRPCRoute', spec: { parentRefs, ...(opts.hostnames ? { hostnames: opts.hostnames } : {}), rules } };
}

export function toService(name: string, port = 80, extra: { namespace?: string; weight?: number } = {}): NonNullable<HTTPRouteRule['backendRefs']>[number] {
  return { name, port, ...extra };
}

export function grant(namespace: string, from: { kind: string; namespace: string }, to: { kind: string; name?: string }): ReferenceGrant {
  return {
    apiVersion: 'gateway.networking.k8s.io/v1beta1',
    kind: 'ReferenceGrant',
    metadata: { name: `allow-${from.namespace}`, namespace },
    spec: { from: [{ group: 'gateway.networking.k8s.io', ...from }], to: [{ group: '', ...to }] },
  };
}
