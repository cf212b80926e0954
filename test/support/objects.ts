// Builders for the Kubernetes objects tests write as manifests or create through the API.
import { mkdtempSync, writeFileSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { stringify } from 'yaml';

export type Obj = Record<string, unknown>;

export function ingressClass(name = 'portico', opts: { controller?: string; isDefault?: boolean } = {}): Obj {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'IngressClass',
    metadata: { name, ...(opts.isDefault ? { annotations: { 'ingressclass.kubernetes.io/is-default-class': 'true' } } : {}) },
    spec: { controller: opts.controller ?? 'portico.dev/ingress-controller' },
  };
}

export interface PathSpec {
  path: string;
  pathType?: string;
  service: string;
  port?: number | string;
}

export function ingress(
  name: string,
  spec: { className?: string | null; rules?: { host?: string; paths: PathSpec[] }[]; defaultBackend?: { service: string; port?: number | string }; tls?: { hosts?: string[]; secretName: string }[] },
  meta: { namespace?: string; annotations?: Record<string, string>; creationTimestamp?: string } = {},
): Obj {
  const backend = (service: string, port: number | string = 80) => ({
    service: { name: service, port: typeof port === 'number' ? { number: port } : { name: port } },
  });
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: { name, namespace: meta.namespace ?? 'default', ...(meta.annotations ? { annotations: meta.annotations } : {}), ...(meta.creationTimestamp ? { creationTimestamp: meta.creationTimestamp } : {}) },
    spec: {
      ...(spec.className === null ? {} : { ingressClassName: spec.className ?? 'portico' }),
      ...(spec.defaultBackend ? { defaultBackend: backend(spec.defaultBackend.service, spec.defaultBackend.port) } : {}),
      ...(spec.tls ? { tls: spec.tls } : {}),
      ...(spec.rules
        ? {
            rules: spec.rules.map((r) => ({
              ...(r.host ? { host: r.host } : {}),
              http: { paths: r.paths.map((p) => ({ path: p.path, pathType: p.pathType ?? 'Prefix', backend: backend(p.service, p.port) })) },
            })),
          }
        : {}),
    },
  };
}

/** A Service with one port named "http" (port 80 unless given), plus an EndpointSlice on 127.0.0.1 at the given ports. */
export function serviceWithEndpoints(name: string, ports: number[], opts: { namespace?: string; port?: number; portName?: string; ready?: boolean[] } = {}): Obj[] {
  const namespace = opts.namespace ?? 'default';
  const portName = opts.portName ?? 'http';
  const objects: Obj[] = [
    { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace }, spec: { ports: [{ name: portName, port: opts.port ?? 80, targetPort: portName }] } },
  ];
  // One slice per target port: an EndpointSlice has one port list for all its endpoints.
  const byPort = new Map<number, number[]>();
  ports.forEach((p, i) => byPort.set(p, [...(byPort.get(p) ?? []), i]));
  let n = 0;
  for (const [port, idx] of byPort) {
    objects.push({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: `${name}-${n++}`, namespace, labels: { 'kubernetes.io/service-name': name } },
      addressType: 'IPv4',
      ports: [{ name: portName, port, protocol: 'TCP' }],
      endpoints: idx.map((i) => ({ addresses: ['127.0.0.1'], conditions: { ready: opts.ready?.[i] ?? true } })),
    });
  }
  return objects;
}

export function tlsSecret(name: string, cert: string, key: string, namespace = 'default'): Obj {
  return { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace }, type: 'kubernetes.io/tls', stringData: { 'tls.crt': cert, 'tls.key': key } };
}

export function toYaml(objects: Obj[]): string {
  return objects.map((o) => stringify(o)).join('---\n');
}

/** A temporary manifest directory. */
export class ManifestDir {
  readonly path = mkdtempSync(join(tmpdir(), 'portico-manifests-'));
  write(file: string, content: Obj[] | string): void {
    const full = join(this.path, file);
    mkdirSync(dirname(full), { recursive: true });
    writeFileSync(full, typeof content === 'string' ? content : toYaml(content));
  }
  remove(file: string): void {
    rmSync(join(this.path, file), { force: true });
  }
  cleanup(): void {
    rmSync(this.path, { recursive: true, force: true });
  }
}
