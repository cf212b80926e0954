// `npm start`: the standalone example, end to end. Starts one echo server for every
// endpoint the example's EndpointSlices name (so the Ingress has real pods to
// reach), then runs portico on examples/hello in the foreground. Extra arguments
// go to portico:  npm start -- --http-port 9000 --log-level debug
// `--example gateway` (npm run start:gateway) runs examples/gateway instead.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { constants } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { startEchoServer, type EchoServer } from './echo-server.ts';
import { NODE_FLAGS, withMallocEnv } from '../bin/node-flags.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const EXAMPLES = join(ROOT, 'examples');
const MANIFESTS = join(EXAMPLES, 'hello');
const BIN = join(ROOT, 'bin', 'portico.js');
const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';

interface Backend {
  service: string;
  namespace: string;
  address: string;
  port: number;
}

/** Every (Service, address, port) the example EndpointSlices list. */
export function exampleBackends(dir = MANIFESTS): Backend[] {
  const backends: Backend[] = [];
  for (const file of readdirSync(dir).filter((f) => /\.(ya?ml|json)$/.test(f)).sort()) {
    for (const doc of parseAllDocuments(readFileSync(join(dir, file), 'utf8'))) {
      const obj = doc.toJS() as {
        kind?: string;
        metadata?: { namespace?: string; labels?: Record<string, string> };
        ports?: { port?: number }[];
        endpoints?: { addresses?: string[] }[];
      } | null;
      if (obj?.kind !== 'EndpointSlice') continue;
      const service = obj.metadata?.labels?.[SERVICE_NAME_LABEL];
      if (!service) continue;
      for (const { port } of obj.ports ?? []) {
        if (!port) continue;
        for (const ep of obj.endpoints ?? []) {
          for (const address of ep.addresses ?? []) backends.push({ service, namespace: obj.metadata?.namespace ?? 'default', address, port });
        }
      }
    }
  }
  return backends;
}

/** `--example <name>` picks examples/<name>; the other arguments go to portico. */
function parseArgs(argv: string[]): { dir: string; portico: string[] } {
  const at = argv.indexOf('--example');
  if (at === -1) return { dir: MANIFESTS, portico: argv };
  const name = argv[at + 1] ?? '';
  if (!/^[a-z][a-z0-9-]*$/.test(name)) {
    process.stderr.write(`start: --example needs the name of a folder under examples/ (hello or gateway), not ${JSON.stringify(name)}\n`);
    process.exit(2);
  }
  return { dir: join(EXAMPLES, name), portico: [...argv.slice(0, at), ...argv.slice(at + 2)] };
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const echoes: EchoServer[] = [];
  const closeEchoes = () => Promise.all(echoes.map((e) => e.close()));

  try {
    for (const b of exampleBackends(args.dir)) {
      echoes.push(await startEchoServer({ name: b.service, namespace: b.namespace, host: b.address, port: b.port }));
      process.stderr.write(`example backend ${b.namespace}/${b.service} on http://${b.address}:${b.port}\n`);
    }
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    const why = e.code === 'EADDRINUSE' ? `a port the example uses is taken (${e.message}); is another "npm start" running?` : e.message;
    process.stderr.write(`start: cannot start the example backends: ${why}\n`);
    await closeEchoes();
    process.exit(1);
  }

  // The IPC channel ties portico to this process: if this one dies, even by SIGKILL,
  // portico sees the channel close and stops (src/cli.ts).
  // NODE_FLAGS and MALLOC_ENV here: bin/portico.js cannot add them itself without losing the channel.
  const child = spawn(process.execPath, [...NODE_FLAGS, BIN, '--manifests', args.dir, ...args.portico], { stdio: ['inherit', 'inherit', 'inherit', 'ipc'], env: withMallocEnv(process.env) });
  // In a terminal, Ctrl-C reaches the whole process group (portico too); forwarding
  // covers `kill <pid of npm start>` as well. portico ignores a second signal.
  const forward = (signal: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  };
  process.on('SIGINT', forward);
  process.on('SIGTERM', forward);
  // `kill <pid of npm>` may leave this process behind (npm does not always pass the
  // signal on): once the parent is gone (re-parented), stop as if told to.
  const parent = process.ppid;
  const orphanCheck = setInterval(() => {
    if (process.ppid !== parent) forward('SIGTERM');
  }, 500);
  orphanCheck.unref();

  const code = await new Promise<number>((resolve) => {
    child.once('error', (err) => {
      process.stderr.write(`start: cannot run portico: ${err.message}\n`);
      resolve(1);
    });
    child.once('exit', (exitCode, signal) => {
      // Shell convention: killed by signal N exits 128+N.
      const signo = signal ? constants.signals[signal] : 0;
      resolve(exitCode ?? 128 + signo);
    });
  });
  await closeEchoes();
  process.exit(code);
}

if (import.meta.main) await main();
