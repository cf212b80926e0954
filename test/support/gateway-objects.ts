// Gateway API manifests for black-box tests (plain objects, written as YAML).
import type { Obj } from './objects.ts';

const V1 = 'gateway.networking.k8s.io/v1';

export function gatewayClass(name = 'portico', controllerName = 'portico.dev/gateway-controller'): Obj {
  return { apiVersion: V1, kind: 'GatewayClass', metadata: { name }, spec: { controllerName } };
}

export function gateway(name: string, listeners: Obj[], namespace = 'default'): Obj {
  return { apiVersion: V1, kind: 'Gateway', metadata: { name, namespace }, spec: { gatewayClassName: 'portico', listeners } };
}

export function httpRoute(name: string, spec: Obj, namespace = 'default'): Obj {
  return { apiVersion: V1, kind: 'HTTPRoute', metadata: { name, namespace }, spec };
}

export function grpcRoute(name: string, spec: Obj, namespace = 'default'): Obj {
  return { apiVersion: V1, kind: 'GRPCRoute', metadata: { name, namespace }, spec };
}

/** Re-exported: Gateway listener ports come from here in most tests. */
export { freePort } from './ports.ts';
