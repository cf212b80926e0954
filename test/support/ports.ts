// Loopback ports for tests that need a port number before anything listens on it.
//
// Neither helper uses listen(0): the kernel hands the same ephemeral port to the next
// listen(0) (an echo backend, portico's own admin port, a test file running beside this
// one) once it is closed, so a "free" or "dead" port taken that way can come alive under
// another server. Both pick below Linux's ephemeral range (32768-60999), from two disjoint
// ranges, and never hand out the same port twice in one process.
import net from 'node:net';

const handedOut = new Set<number>();

async function pick(low: number, high: number, usable: (port: number) => Promise<boolean>): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = low + Math.floor(Math.random() * (high - low));
    if (handedOut.has(port)) continue;
    if (await usable(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error(`no usable loopback port found in ${low}-${high - 1}`);
}

/** A port that was free a moment ago, for a listener portico binds itself (20000-31999). */
export function freePort(): Promise<number> {
  return pick(20_000, 32_000, (port) => {
    const server = net.createServer();
    return new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
  });
}

/**
 * A port where connections are refused, for a pod that is down (10000-19999). Nothing in
 * the tests binds this range, so it stays refused.
 */
export function closedPort(): Promise<number> {
  return pick(10_000, 20_000, (port) => {
    const socket = net.connect(port, '127.0.0.1');
    return new Promise<boolean>((resolve) => {
      socket.once('connect', () => {
        socket.destroy();
        resolve(false);
      });
      socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ECONNREFUSED'));
    });
  });
}
