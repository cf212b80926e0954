// nginx configurations for the comparison: one instance as the upstream (a fixed
// small body from C, so it is never the bottleneck), one as the reverse proxy that
// portico is measured against.
import { join } from 'node:path';

/** Directives every instance needs to run unprivileged out of its own directory. */
function common(dir: string, name: string, workers = 1): string {
  return `worker_processes ${workers};
daemon off;
master_process on;
pid ${join(dir, `${name}.pid`)};
error_log ${join(dir, `${name}-error.log`)} warn;
events { worker_connections 4096; }
`;
}

function tempPaths(dir: string): string {
  return ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `  ${t}_temp_path ${join(dir, `tmp-${t}`)};`).join('\n');
}

export const UPSTREAM_BODY = 'hello from the bench upstream\n';

export function upstreamConfig(dir: string, port: number): string {
  return `${common(dir, 'upstream')}
http {
  access_log off;
${tempPaths(dir)}
  # Both proxies hold keep-alive connections to this server; never close them
  # after N requests (nginx's default is 1000) so neither pays for reconnects.
  keepalive_requests 10000000;
  keepalive_timeout 300s;
  server {
    listen 127.0.0.1:${port} backlog=4096;
    location / {
      default_type text/plain;
      return 200 ${JSON.stringify(UPSTREAM_BODY)};
    }
  }
}
`;
}

/**
 * With accessLog, nginx writes its default combined log to a file through a 64k buffer, as a
 * production edge would; toStdout: to its stdout instead (ingress-nginx's /dev/stdout).
 */
export function proxyConfig(dir: string, port: number, upstreamPort: number, accessLog = false, workers = 1, toStdout = false): string {
  return `${common(dir, 'proxy', workers)}
http {
  ${accessLog ? `access_log ${toStdout ? '/dev/stdout' : join(dir, 'access.log')} combined buffer=64k flush=1s;` : 'access_log off;'}
${tempPaths(dir)}
  # portico never closes a client connection after N requests; match that.
  keepalive_requests 10000000;
  keepalive_timeout 300s;
  upstream bench_upstream {
    server 127.0.0.1:${upstreamPort};
    keepalive 64;
    keepalive_requests 10000000;
  }
  server {
    listen 127.0.0.1:${port} backlog=4096;
    server_name bench.local;
    location / {
      proxy_pass http://bench_upstream;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      # The headers an ingress controller sets (and portico sets), so both
      # proxies do comparable work per request.
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_set_header X-Forwarded-Host $host;
      proxy_set_header X-Request-ID $request_id;
    }
  }
}
`;
}

/** Manifests routing bench.local to the upstream, for portico's standalone mode. */
export function porticoManifests(upstreamPort: number): string {
  return `apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata:
  name: portico
spec:
  controller: portico.dev/ingress-controller
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: bench
  namespace: default
spec:
  ingressClassName: portico
  rules:
    - host: bench.local
      http:
        paths:
          - path: /
            pathType: Prefix
            backend:
              service:
                name: bench-upstream
                port:
                  name: http
---
apiVersion: v1
kind: Service
metadata:
  name: bench-upstream
  namespace: default
spec:
  ports:
    - name: http
      port: 80
      targetPort: http
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: bench-upstream
  namespace: default
  labels:
    kubernetes.io/service-name: bench-upstream
addressType: IPv4
ports:
  - name: http
    port: ${upstreamPort}
    protocol: TCP
endpoints:
  - addresses: ["127.0.0.1"]
    conditions:
      ready: true
`;
}

// ---- the cache comparison (bench/cache.ts) ----

/** The upstream of the cache bench: `body` with Cache-Control max-age=3600, so both caches keep it. */
export function cachingUpstreamConfig(dir: string, port: number, body: string): string {
  return `${common(dir, 'upstream')}
http {
  access_log off;
${tempPaths(dir)}
  keepalive_requests 10000000;
  keepalive_timeout 300s;
  server {
    listen 127.0.0.1:${port} backlog=4096;
    location / {
      default_type text/plain;
      add_header Cache-Control "max-age=3600" always;
      return 200 ${JSON.stringify(body)};
    }
  }
}
`;
}

/**
 * nginx as a caching reverse proxy: proxy_cache in memory-backed files (the OS page
 * cache serves the hits), honouring the upstream's Cache-Control, with a lock so
 * concurrent misses make one upstream request (as portico collapses them).
 */
export function proxyCacheConfig(dir: string, port: number, upstreamPort: number): string {
  return `${common(dir, 'proxy')}
http {
  access_log off;
${tempPaths(dir)}
  keepalive_requests 10000000;
  keepalive_timeout 300s;
  proxy_cache_path ${join(dir, 'cache')} levels=1:2 keys_zone=bench:16m max_size=128m inactive=1h use_temp_path=off;
  upstream bench_upstream {
    server 127.0.0.1:${upstreamPort};
    keepalive 64;
  }
  server {
    listen 127.0.0.1:${port} backlog=4096;
    server_name bench.local;
    location / {
      proxy_pass http://bench_upstream;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_cache bench;
      proxy_cache_lock on;
      proxy_cache_key $scheme$host$request_uri;
      add_header X-Cache $upstream_cache_status;
    }
  }
}
`;
}

// ---- gRPC (bench/h2.ts, bench/rss-under-load.ts --mode grpc) ----

export const GRPC_HOST = 'grpc.local';
export const GRPC_PATH = '/bench.Echo/Unary';
/** One gRPC message: uncompressed flag, 4-byte length, payload. */
const grpcMessage = (payload: string) => Buffer.concat([Buffer.from([0, 0, 0, 0, payload.length]), Buffer.from(payload)]);
export const GRPC_REQUEST = grpcMessage('hello');
export const GRPC_REPLY = grpcMessage('world');

/** A gRPC "server" in C: every call gets the same message and grpc-status 0 (a static file, so POST needs the 405 trick). */
export function grpcUpstreamConfig(dir: string, port: number): string {
  return `${common(dir, 'grpc-upstream')}
http {
  access_log off;
${tempPaths(dir)}
  keepalive_requests 10000000;
  keepalive_timeout 300s;
  http2_max_requests 10000000;
  server {
    listen 127.0.0.1:${port} http2 backlog=4096;
    root ${join(dir, 'grpc-root')};
    location / {
      default_type application/grpc;
      add_trailer grpc-status 0;
      error_page 405 =200 /reply;
      try_files /reply =404;
    }
  }
}
`;
}

/** Manifests routing grpc.local over h2c to the gRPC upstream (`portico.dev/upstream-protocol: h2c`). */
export function grpcRouteManifests(grpcUpstreamPort: number): string {
  return `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: grpc
  namespace: default
  annotations:
    portico.dev/upstream-protocol: h2c
spec:
  ingressClassName: portico
  rules:
    - host: ${GRPC_HOST}
      http:
        paths:
          - path: /
            pathType: Prefix
            backend:
              service:
                name: grpc-upstream
                port:
                  name: grpc
---
apiVersion: v1
kind: Service
metadata:
  name: grpc-upstream
  namespace: default
spec:
  ports:
    - name: grpc
      port: 50051
      targetPort: grpc
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: grpc-upstream
  namespace: default
  labels:
    kubernetes.io/service-name: grpc-upstream
addressType: IPv4
ports:
  - name: grpc
    port: ${grpcUpstreamPort}
    protocol: TCP
endpoints:
  - addresses: ["127.0.0.1"]
    conditions:
      ready: true
`;
}
