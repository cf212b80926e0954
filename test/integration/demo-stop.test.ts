// `npm start` leaves nothing behind: killing its process, however (SIGTERM or SIGKILL,
// the starter itself or the npm above it), stops portico and the example backends, so
// their ports are free again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { exampleBackends } from '../../examples/start.ts';
import { freePort } from '../support/ports.ts';

const START = fileURLToPath(new URL('../../examples/start.ts', import.meta.url));
// portico's port comes from freePort(), not 0: a port from listen(0), once freed, can be
// handed to another test's server at once and would look like portico still listening.
const args = async () => ['--http-port', String(await freePort()), '--https-port', 'off', '--admin-port', 'off', '--access-log=false'];

/**
 * Resolves with portico's HTTP port once the demo's portico says it is ready. Fails when
 * the demo exits first (an example backend's port taken, say) or is not ready in 45 s,
 * and then kills it: a demo left running would keep this file's process from ending.
 */
function readyPort(child: ChildProcess): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the demo did not get ready in 45 s')), 45_000);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`the demo exited before it was ready (${signal ?? `code ${code}`})`));
    });
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (!line.includes('portico ready')) return;
      clearTimeout(timer);
      resolve((JSON.parse(line) as { http: number }).http);
    });
  }).catch((err: unknown) => {
    child.kill('SIGKILL');
    throw err;
  });
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}

async function allFree(ports: number[]): Promise<void> {
  const deadline = Date.now() + 8000;
  for (;;) {
    const open = [];
    for (const p of ports) if (await accepts(p)) open.push(p);
    if (open.length === 0) return;
    if (Date.now() > deadline) assert.fail(`still listening: ${open.join(', ')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const backendPorts = [...new Set(exampleBackends().map((b) => b.port))];

test('SIGKILL of the starter: portico and the backends go with it', async () => {
  const demo = spawn(process.execPath, [START, ...(await args())], { stdio: ['ignore', 'pipe', 'ignore'] });
  const port = await readyPort(demo);
  assert.ok(await accepts(port));
  demo.kill('SIGKILL');
  await allFree([port, ...backendPorts]);
});

test('SIGKILL of the process above the starter (npm): the starter notices and stops everything', async () => {
  // A stand-in for npm: runs the starter, shares its stdout, and exits with it.
  const npm = spawn(process.execPath, ['-e', `require('node:child_process').spawn(process.execPath, ${JSON.stringify([START, ...(await args())])}, { stdio: 'inherit' }).on('exit', (code) => process.exit(code ?? 1)); setInterval(() => {}, 1000);`], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const port = await readyPort(npm);
  npm.kill('SIGKILL');
  await allFree([port, ...backendPorts]);
});
