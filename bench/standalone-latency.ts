// Standalone mode: time from a new Ingress file written into a manifest directory of N
// Ingress files to the first 200 on its host, through the real CLI. With R > 0, also
// R HTTPRoutes over 5 Gateways, and the same figure for a new HTTPRoute file, then for a
// listener added to one Gateway (R/5 routes name it; up to 10 samples, each moving the
// added listener to a new port): the file written -> one of its routes answers there.
//   node_modules/.bin/node bench/standalone-latency.ts [N=10000] [samples=100] [R=0] [workers=1]
// PORTICO_CPU_PROF=DIR profiles the primary (--cpu-prof) into DIR. BENCH_LOGS=FILE writes
// every log line and sample window there. BENCH_DEBUG=1 runs
// portico at debug level, so the slow samples are matched to V8's long GC pauses too.
// BENCH_NODE_ARGS="--flag ..." starts portico with those Node flags (an A/B: --max-opt=999 keeps the compilers on from the start).
// BENCH_TLS=1: every one of the N Ingresses has TLS, with a Secret of its own (one PEM for all,
// so what is timed is the per-host work of a change, not OpenSSL building contexts). Then
// also a renewal: one Ingress file rewritten with a new certificate in its Secret -> the
// first TLS handshake (SNI: its host) on the HTTPS port that gets the new certificate.
// BENCH_TLS_MISMATCH=1 (with BENCH_TLS=1): that certificate covers no host of theirs (it is
// for *.elsewhere.bench), so each of the N Ingresses carries a problem (a
// CertificateHostMismatch warning): what a change costs when the config has N problems.
// The echo pod runs in a process of its own (bench/lib/out-of-process.ts); IN_PROCESS=1
// runs it in the bench's process, beside the client that times the samples, as before.
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import tls from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEchoServer } from '../examples/echo-server.ts';
import { startEchoProcess } from './lib/out-of-process.ts';
import { startPortico, type PorticoProcess } from '../test/support/portico-process.ts';
import { generate } from 'selfsigned';
import { ingress, ingressClass, serviceWithEndpoints, tlsSecret, toYaml } from '../test/support/objects.ts';
import { get } from '../test/support/http.ts';
import { freePort, gateway, gatewayClass, httpRoute } from '../test/support/gateway-objects.ts';
import { untilServed } from './lib/until-served.ts';
import { cpuWaits, formatSummary, machineLoad, reportTail, summarize, waitedBetween, type SampleWindow } from './lib/latency.ts';

const existing = Number(process.argv[2] ?? 10_000);
const samples = Number(process.argv[3] ?? 100);
const httpRoutes = Number(process.argv[4] ?? 0);
const workers = process.argv[5] ?? '1';
const GATEWAYS = 5;

const dir = mkdtempSync(join(tmpdir(), 'portico-bench-standalone-'));
const inProcess = process.env.IN_PROCESS === '1';
const echo = inProcess ? await startEchoServer({ name: 'web' }) : await startEchoProcess('web');
let portico: PorticoProcess | undefined;
try {
  writeFileSync(join(dir, 'base.yaml'), toYaml([ingressClass('portico'), ...serviceWithEndpoints('web', [echo.port])]));
  // A wildcard must cover two labels at least, so the TLS hosts are one level further down.
  const mismatch = process.env.BENCH_TLS_MISMATCH === '1';
  const certificateName = mismatch ? '*.elsewhere.bench' : '*.tls.bench';
  const pems =
    process.env.BENCH_TLS === '1'
      ? await generate([{ name: 'commonName', value: certificateName }], { keyType: 'ec', curve: 'P-256', extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: certificateName }] }] })
      : undefined;
  /** Ingress i's file (with TLS: the Ingress and its Secret, with these PEMs). */
  const preFile = (i: number, certificate = pems) => {
    const host = certificate ? `pre-${i}.tls.bench` : `pre-${i}.bench`;
    const rules = [{ host, paths: [{ path: '/', service: 'web' }] }];
    return certificate
      ? [ingress(`pre-${i}`, { rules, tls: [{ hosts: [host], secretName: `pre-${i}-tls` }] }), tlsSecret(`pre-${i}-tls`, certificate.cert, certificate.private)]
      : [ingress(`pre-${i}`, { rules })];
  };
  for (let i = 0; i < existing; i++) writeFileSync(join(dir, `pre-${i}.yaml`), toYaml(preFile(i)));
  const gatewayPorts: number[] = [];
  /** The Gateways' file; `extraPort`: gw0 has a second listener there. */
  const gatewayFile = (extraPort?: number) => [
    ...gatewayPorts.map((port, g) => gateway(`gw${g}`, [{ name: 'http', port, protocol: 'HTTP' }, ...(g === 0 && extraPort !== undefined ? [{ name: 'extra', port: extraPort, protocol: 'HTTP' }] : [])])),
    gatewayClass(),
  ];
  if (httpRoutes > 0) {
    for (let g = 0; g < GATEWAYS; g++) gatewayPorts.push(await freePort());
    writeFileSync(join(dir, 'gateways.yaml'), toYaml(gatewayFile()));
    for (let i = 0; i < httpRoutes; i++) {
      writeFileSync(join(dir, `route-${i}.yaml`), toYaml([httpRoute(`route-${i}`, { parentRefs: [{ name: `gw${i % GATEWAYS}` }], hostnames: [`r${i}.gw.bench`], rules: [{ backendRefs: [{ name: 'web', port: 80 }] }] })]));
    }
  }
  const started = performance.now();
  const profileDir = process.env.PORTICO_CPU_PROF;
  // A fixed port, as in production: workers bind it themselves (SO_REUSEPORT). Port 0
  // makes node:cluster's primary accept every connection and hand it over, so each probe
  // waited for the primary, the process that has just translated and shipped the change.
  portico = await startPortico(['--manifests', dir, '--http-port', String(await freePort()), ...(pems ? ['--https-port', String(await freePort())] : []), '--access-log=false', ...(process.env.BENCH_DEBUG ? ['--log-level', 'debug'] : []), '--workers', workers], profileDir ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${profileDir}` } : {}, 120_000, process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean));
  const startMs = performance.now() - started;

  /** Writes `file` and times until `host` answers 200 on `port`. */
  const windows: SampleWindow[] = [];
  const floor: number[] = [];
  const waits = cpuWaits(portico.child.pid!);
  const measure = async (port: number, host: string, file: string, objects: Parameters<typeof toYaml>[0], served?: () => Promise<boolean>) => {
    const waited0 = waits();
    const from = Date.now();
    const t0 = performance.now();
    writeFileSync(join(dir, file), toYaml(objects));
    await untilServed(served ?? (async () => (await get(port, host, '/').catch(() => ({ status: 0 }))).status === 200));
    const ms = performance.now() - t0;
    windows.push({ name: file, from, to: Date.now(), storeChange: `${(objects[0] as { kind: string }).kind} default/${(objects[0] as { metadata: { name: string } }).metadata.name}`, waited: waitedBetween(waited0, waits()) });
    await new Promise((r) => setTimeout(r, 100));
    // The probe's floor: one request to a host served all along, between the samples.
    const f0 = performance.now();
    await get(port === portico!.https ? portico!.http : port, 'pre-0.bench', '/').catch(() => undefined);
    floor.push(performance.now() - f0);
    return ms;
  };
  const summary = (results: number[]) => formatSummary(summarize(results));
  // Steady state: a process that has served traffic (the first request ever through a
  // fresh process costs some 30 ms of compilation and a first upstream connection).
  for (let i = 0; i < 20; i++) await get(portico.http, `pre-${i}.bench`, '/');
  const ingresses: number[] = [];
  for (let s = 0; s < samples; s++) {
    const host = `new-${s}.bench`;
    ingresses.push(await measure(portico.http, host, `new-${s}.yaml`, [ingress(`new-${s}`, { rules: [{ host, paths: [{ path: '/', service: 'web' }] }] })]));
  }
  const routes: number[] = [];
  for (let s = 0; s < (httpRoutes > 0 ? samples : 0); s++) {
    const host = `new-${s}.gw.bench`;
    routes.push(await measure(gatewayPorts[s % GATEWAYS]!, host, `new-route-${s}.yaml`, [httpRoute(`new-route-${s}`, { parentRefs: [{ name: `gw${s % GATEWAYS}` }], hostnames: [host], rules: [{ backendRefs: [{ name: 'web', port: 80 }] }] })]));
  }
  const listeners: number[] = [];
  for (let s = 0; s < (httpRoutes > 0 ? Math.min(samples, 10) : 0); s++) {
    const port = await freePort();
    listeners.push(await measure(port, 'r0.gw.bench', 'gateways.yaml', gatewayFile(port)));
  }
  // Renewals: one Ingress file rewritten with a new certificate in its Secret (a certificate of its own
  // each, made beforehand) -> the first handshake for its host that gets it.
  const renewals: number[] = [];
  if (pems !== undefined) {
    const renewed = [];
    for (let s = 0; s < samples; s++) renewed.push(await generate([{ name: 'commonName', value: '*.tls.bench' }], { keyType: 'ec', curve: 'P-256', extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: '*.tls.bench' }] }] }));
    /** The SHA-256 fingerprint of the certificate served for `servername` ('' when the handshake failed). */
    const served = (servername: string) =>
      new Promise<string>((resolve) => {
        const socket = tls.connect({ port: portico!.https, host: '127.0.0.1', servername, rejectUnauthorized: false }, () => {
          resolve(socket.getPeerCertificate().fingerprint256);
          socket.destroy();
        });
        socket.on('error', () => resolve(''));
      });
    for (let s = 0; s < samples; s++) {
      const i = (s * 97 + 1) % existing;
      const fingerprint = new X509Certificate(renewed[s]!.cert).fingerprint256;
      const host = `pre-${i}.tls.bench`;
      renewals.push(await measure(portico.https, host, `pre-${i}.yaml`, preFile(i, renewed[s]).reverse(), async () => (await served(host)) === fingerprint));
    }
  }
  const load = machineLoad();
  const logs = portico.logs;
  await portico.stop();
  // BENCH_LOGS=FILE: every log line of the run (primary and workers), with the samples' windows, for a closer look at the tail.
  if (process.env.BENCH_LOGS) writeFileSync(process.env.BENCH_LOGS, [...logs, ...windows.map((w) => ({ msg: 'bench sample', ...w }))].map((l) => JSON.stringify(l)).join('\n') + '\n');
  portico = undefined;
  console.log(`${existing} Ingress files${pems ? (mismatch ? ' (each with TLS, and a problem: the certificate does not cover its host)' : ' (each with TLS)') : ''}${httpRoutes > 0 ? `, ${httpRoutes} HTTPRoutes over ${GATEWAYS} Gateways` : ''}, --workers ${workers}; echo pod ${inProcess ? 'in the bench process' : 'in a process of its own'}; process start to ready ${(startMs / 1000).toFixed(1)} s; ${load}`);
  console.log(`new Ingress file -> first 200: ${summary(ingresses)}`);
  // What a request costs the probe on a route that needs no change (a new connection, a request, the pod's answer).
  console.log(`the probe's floor (one request to a host served all along, after each sample): ${summary(floor)}`);
  // The controller's part: from the store change (file read and parsed) to the table swapped.
  const serve = logs.filter((l) => l.msg === 'route table updated' && typeof l.changeToServeMs === 'number').map((l) => l.changeToServeMs as number);
  if (serve.length > 0) console.log(`controller change -> table swapped (changeToServeMs, every update): ${summary(serve)}`);
  if (renewals.length > 0) console.log(`a Secret renewed (its Ingress file rewritten) -> first handshake with the new certificate: ${summary(renewals)}`);
  if (routes.length > 0) console.log(`new HTTPRoute file -> first 200: ${summary(routes)}`);
  if (listeners.length > 0) console.log(`listener added to 1 of ${GATEWAYS} Gateways (${Math.ceil(httpRoutes / GATEWAYS)} routes name it) -> first 200 on its port: ${summary(listeners)}`);
  reportTail(windows, logs);
} finally {
  // Also when a wait failed: never leave portico (and its workers) running.
  await portico?.stop();
  await echo.close();
  rmSync(dir, { recursive: true, force: true });
}

