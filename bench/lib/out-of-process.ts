// The parts of a latency bench that are not portico — the echo pod and the test API
// server — each in a process of its own. In the bench's process they shared one event
// loop with the client that times the samples: a pod reply or a status write fanned
// out to the watches held the client back, and the sample counted that as portico's.
import { fork, spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
type KubeObject = Record<string, unknown>;
import type { FakeKubeApiServer } from '../../test/support/kube-apiserver/index.ts';
import { freePort } from '../../test/support/ports.ts';
import { ingressesWithoutStatus } from './latency.ts';

const echoScript = fileURLToPath(new URL('../../examples/echo-server.ts', import.meta.url));
const apiScript = fileURLToPath(new URL('./api-server-child.ts', import.meta.url));

const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});

function track(child: ChildProcess): ChildProcess {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

function connects(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

function stopped(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

/** examples/echo-server.ts as its own process; resolves once it accepts connections. */
export async function startEchoProcess(name: string): Promise<{ port: number; close(): Promise<void> }> {
  const port = await freePort();
  const child = track(spawn(process.execPath, [echoScript, '--name', name, '--port', String(port)], { stdio: ['ignore', 'ignore', 'inherit'] }));
  const deadline = Date.now() + 20_000;
  while (!(await connects(port))) {
    if (child.exitCode !== null) throw new Error(`echo server ${name} exited with ${child.exitCode}`);
    if (Date.now() > deadline) throw new Error(`echo server ${name} did not listen on ${port} within 20 s`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return { port, close: () => stopped(child) };
}

export interface ApiServerProcess {
  apply(objects: readonly KubeObject[]): Promise<number>;
  writeKubeconfig(dir: string): Promise<string>;
  ingressesWithoutStatus(): Promise<number>;
  stop(): Promise<void>;
}

/** The test API server (test/support/kube-apiserver) as its own process, driven over IPC. */
export async function startApiServerProcess(): Promise<ApiServerProcess> {
  const child = track(fork(apiScript, [], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] }));
  const waiting = new Map<number, (result: unknown) => void>();
  let next = 0;
  await new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`test API server exited with ${code}`)));
    child.on('message', (m: { ready?: boolean; id?: number; result?: unknown }) => {
      if (m.ready) resolve();
      else if (m.id !== undefined) {
        waiting.get(m.id)?.(m.result);
        waiting.delete(m.id);
      }
    });
  });
  const call = <T>(message: Record<string, unknown>): Promise<T> =>
    new Promise((resolve) => {
      const id = next++;
      waiting.set(id, resolve as (r: unknown) => void);
      child.send({ id, ...message });
    });
  return {
    apply: (objects) => call<number>({ op: 'apply', objects }),
    writeKubeconfig: (dir) => call<string>({ op: 'kubeconfig', dir }),
    ingressesWithoutStatus: () => call<number>({ op: 'ingressesWithoutStatus' }),
    stop: async () => {
      if (child.exitCode === null) await Promise.race([call({ op: 'stop' }), stopped(child)]);
    },
  };
}

/** An API server in the bench's own process behind the same interface (IN_PROCESS=1: the benches' old layout). */
export function inProcessApi(server: FakeKubeApiServer): ApiServerProcess {
  return {
    apply: async (objects) => {
      for (const o of objects) server.apply(o as { kind?: string });
      return objects.length;
    },
    writeKubeconfig: async (dir) => server.writeKubeconfig(dir),
    ingressesWithoutStatus: async () => ingressesWithoutStatus(server),
    stop: () => server.stop(),
  };
}
