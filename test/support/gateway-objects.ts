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

export function grpcRoute(name: string, spec: Obj, namespace = 'default'): Obj {
  return { apiVersion: V1, kind: 'GRPCRoute', metadata: { name, namespace }, spec };
}

/**
 * A loopback port that was free a moment ago (for a Gateway listener, which portico binds
 * itself). Picked below Linux's ephemeral range (32768-60999): a port from listen(0) could
 * be handed out again to the next listen(0) (an echo backend, portico's own ports) before
 * portico binds it.
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; ; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const server = net.createServer();
    const bound = await new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => resolve(true));
    });
    if (bound) {
      await new Promise((r) => server.close(r));
      return port;
    }
    if (attempt > 100) throw new Error('no free port found in 20000-31999');
  }
}
