// Gateway API manifests for black-box tests (plain objects, written as YAML).
import net from 'node:net';
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

/** A loopback port that was free a moment ago (for a Gateway listener, which portico binds itself). */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise((r) => server.close(r));
  return port;
}
