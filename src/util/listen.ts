// Binding a listener: the error a user reads when a port is taken, IPv4 when the host has
// no IPv6, and SO_REUSEPORT for workers. Apart from the data plane, which the primary of
// several workers never loads (it only checks the ports and serves the admin port).
import type { AddressInfo, Server } from 'node:net';
import type { Cluster } from 'node:cluster';
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
// The module object itself is the cluster (its types describe an ES namespace with a default).
const cluster = process.getBuiltinModule('node:cluster') as unknown as Cluster;
const net = process.getBuiltinModule('node:net');

/**
 * A worker binds a fixed port itself, with SO_REUSEPORT (Linux), and the kernel hands new
 * connections straight to the workers. Through node:cluster's round-robin each new
 * connection waited for the primary, the process that translates: a full rebuild or an
 * idle collection there held new connections back for 0.2-1 s at 10,000 Ingresses
 * (bench/new-connection-latency.ts). Port 0 keeps the round-robin, which gives every
 * worker the same port.
 */
function reusePortFor(port: number): boolean {
  return cluster.isWorker && port !== 0 && process.platform === 'linux';
}

/**
 * Fails as a busy port does with one process, before workers share `port`: SO_REUSEPORT
 * would let them join the sockets of another process of this user that set it too (a
 * second portico on the same port would split its traffic). Binding alone for a moment
 * fails on any socket already there.
 */
export async function ensurePortFree(port: number, host: string, what: string): Promise<void> {
  const probe = net.createServer();
  await listen(probe, port, host, what);
  await new Promise((resolve) => probe.close(resolve));
}

export function listen(server: Server, port: number, host: string, what: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      // "::" listens on IPv6 and IPv4 (dual-stack); a host without IPv6 gets IPv4 alone.
      if (host === '::' && (err.code === 'EAFNOSUPPORT' || err.code === 'EADDRNOTAVAIL')) {
        listen(server, port, '0.0.0.0', what).then(resolve, reject);
        return;
      }
      reject(new Error(`${what}: cannot listen on ${host}:${port}: ${err.code === 'EADDRINUSE' ? 'address already in use' : err.message}`));
    };
    server.once('error', onError);
    server.listen({ port, host, reusePort: reusePortFor(port) }, () => {
      server.off('error', onError);
      resolve((server.address() as AddressInfo).port);
    });
  });
}
