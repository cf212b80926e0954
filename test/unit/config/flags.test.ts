// Flags and PORTICO_* variables, as parsed, and as the CLI reports mistakes.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import net from 'node:net';
import { FlagError, helpText, parseOptions, unknownEnvironment } from '../../../src/config/flags.ts';
import { ManifestDir, ingress, ingressClass, serviceWithEndpoints } from '../../support/objects.ts';
import { startPortico } from '../../support/portico-process.ts';

const BIN = fileURLToPath(new URL('../../../bin/portico.js', import.meta.url));

function parseError(argv: string[], env: NodeJS.ProcessEnv = {}): string {
  try {
    parseOptions(argv, env);
  } catch (err) {
    assert.ok(err instanceof FlagError, `a FlagError, not ${String(err)}`);
    return err.message;
  }
  assert.fail(`no error for ${JSON.stringify(argv)} ${JSON.stringify(env)}`);
}

test('defaults, environment and flags: a flag beats its variable, which beats the default', () => {
  const defaults = parseOptions([], {});
  assert.equal(defaults.httpPort, 8080);
  assert.equal(defaults.adminBind, '127.0.0.1');
  assert.equal(defaults.upstreamResponseTimeout, 60_000);
  assert.equal(parseOptions([], { PORTICO_HTTP_PORT: '9000' }).httpPort, 9000);
  assert.equal(parseOptions(['--http-port', '9001'], { PORTICO_HTTP_PORT: '9000' }).httpPort, 9001);
  assert.equal(parseOptions(['--http-port=off'], {}).httpPort, -1);
  assert.equal(parseOptions(['--access-log=false'], {}).accessLog, false);
  assert.equal(parseOptions(['--no-access-log'], {}).accessLog, false);
  assert.equal(parseOptions(['--shutdown-grace', '1m30s'], {}).shutdownGrace, 90_000);
});

test('bad flags and values are refused with one line naming the flag or variable', () => {
  assert.match(parseError(['--http-prot', '1']), /^unknown flag --http-prot \(see --help\)$/);
  assert.match(parseError(['--http-port', '70000']), /^--http-port: invalid value "70000": expected a port number/);
  assert.match(parseError(['--http-port']), /^--http-port needs a value$/);
  assert.match(parseError(['--upstream-response-timeout', 'soon']), /expected a duration/);
  assert.match(parseError([], { PORTICO_BIND: 'everywhere' }), /^\$PORTICO_BIND: invalid value "everywhere": expected an IPv4 or IPv6 address$/);
  assert.match(parseError(['--default-certificate', '/x.pem']), /go together/);
});

test('numbers that make no sense are refused with the same one line, never clamped or taken as something else', () => {
  assert.equal(parseError(['--tls-contexts', '0']), '--tls-contexts: invalid value "0": expected an integer of at least 1');
  assert.equal(parseError([], { PORTICO_TLS_CONTEXTS: '0' }), '$PORTICO_TLS_CONTEXTS: invalid value "0": expected an integer of at least 1');
  assert.equal(parseOptions(['--tls-contexts', '1'], {}).tlsContexts, 1);
  // Past 2^53 an integer is no longer the number written.
  assert.equal(parseError(['--max-requests-per-endpoint', '99999999999999999999']), '--max-requests-per-endpoint: invalid value "99999999999999999999": expected a non-negative integer');
  // 0 would turn off a protection the help does not say can be turned off, or spin.
  assert.equal(parseError(['--client-header-timeout', '0']), '--client-header-timeout: invalid value "0": expected a duration above 0 such as 500ms, 5s, 2m or 1h');
  assert.equal(parseError(['--tls-handshake-timeout', '0']), '--tls-handshake-timeout: invalid value "0": expected a duration above 0 such as 500ms, 5s, 2m or 1h');
  assert.equal(parseError(['--retry-period', '0']), '--retry-period: invalid value "0": expected a duration above 0 such as 500ms, 5s, 2m or 1h');
  // A connect or idle timeout of 0 was silently "no limit": a pod that never answers held the request forever.
  // nginx's proxy_connect_timeout and proxy_read_timeout have no such value either.
  assert.equal(parseError(['--upstream-connect-timeout', '0']), '--upstream-connect-timeout: invalid value "0": expected a duration above 0 such as 500ms, 5s, 2m or 1h');
  assert.equal(parseError([], { PORTICO_UPSTREAM_CONNECT_TIMEOUT: '0s' }), '$PORTICO_UPSTREAM_CONNECT_TIMEOUT: invalid value "0s": expected a duration above 0 such as 500ms, 5s, 2m or 1h');
  assert.equal(parseError(['--upstream-idle-timeout', '0']), '--upstream-idle-timeout: invalid value "0": expected a duration above 0 such as 500ms, 5s, 2m or 1h');
  assert.equal(parseError([], { PORTICO_UPSTREAM_IDLE_TIMEOUT: '0ms' }), '$PORTICO_UPSTREAM_IDLE_TIMEOUT: invalid value "0ms": expected a duration above 0 such as 500ms, 5s, 2m or 1h');
  assert.equal(parseOptions(['--upstream-connect-timeout', '1ms', '--upstream-idle-timeout', '1ms'], {}).upstreamIdleTimeout, 1);
  // A CacheInvalidation deleted the moment one replica made it Complete could go before the others applied it.
  assert.equal(parseError(['--cache-invalidation-ttl', '0']), '--cache-invalidation-ttl: invalid value "0": expected a duration of at least 1s');
  assert.equal(parseError(['--cache-invalidation-ttl', '500ms']), '--cache-invalidation-ttl: invalid value "500ms": expected a duration of at least 1s');
  assert.equal(parseOptions(['--cache-invalidation-ttl', '1s'], {}).cacheInvalidationTtl, 1000);
  // A cache of 0 bytes would take no response and say nothing (the cache is used only by Ingresses that ask for it).
  assert.equal(parseError(['--cache-size', '0']), '--cache-size: invalid value "0": expected a size above 0 such as 64MiB, 512m or 1g');
  assert.equal(parseError([], { PORTICO_CACHE_SIZE: '0MiB' }), '$PORTICO_CACHE_SIZE: invalid value "0MiB": expected a size above 0 such as 64MiB, 512m or 1g');
  assert.equal(parseOptions(['--cache-size', '1'], {}).cacheSize, 1);
  assert.equal(parseError(['--resync', '500ms']), '--resync: invalid value "500ms": expected a duration of at least 1s');
  assert.equal(parseOptions(['--resync', '1s'], {}).resync, 1000);
  // Longer than a timer can wait: it would fire at once.
  assert.equal(parseError(['--shutdown-grace', '600h']), '--shutdown-grace: invalid value "600h": expected a duration of at most 596h (about 24 days)');
  assert.equal(parseOptions(['--shutdown-grace', '596h'], {}).shutdownGrace, 596 * 3_600_000);
  // "off" is for listeners; a redirect's port cannot be off (it silently meant the default).
  assert.equal(parseError(['--https-redirect-port', 'off']), '--https-redirect-port: invalid value "off": expected a port number 0-65535');
  assert.equal(parseOptions(['--https-port', 'off'], {}).httpsPort, -1);
  // A leader must be able to retry before its renew deadline.
  assert.equal(parseError(['--retry-period', '10s']), '--retry-period (10000 ms) must be shorter than --renew-deadline (10000 ms)');
  // Where 0 is documented (or means "no limit", as in undici and node:tls), it stays accepted.
  const zeros = parseOptions(['--client-request-timeout', '0', '--debounce', '0', '--max-body-size', '0', '--max-requests-per-endpoint', '0', '--max-client-connections', '0', '--upstream-response-timeout', '0', '--client-idle-timeout', '0', '--upstream-keepalive', '0', '--shutdown-grace', '0'], {});
  assert.deepEqual(
    [zeros.clientRequestTimeout, zeros.debounce, zeros.maxBodySize, zeros.maxRequestsPerEndpoint, zeros.maxClientConnections, zeros.upstreamResponseTimeout, zeros.clientIdleTimeout, zeros.upstreamKeepAlive, zeros.shutdownGrace],
    [0, 0, 0, 0, 0, 0, 0, 0, 0],
  );
  // --client-idle-timeout 0 is no keep-alive, as nginx's keepalive_timeout 0; the help says so.
  assert.match(helpText(), /--client-idle-timeout DURATION +idle keep-alive time of client connections \(0: no keep-alive, as nginx keepalive_timeout 0: .*Connection: close/);
  // --upstream-keepalive 0 keeps no idle connection to pods; --shutdown-grace 0 does not wait on SIGTERM. The help says so.
  assert.match(helpText(), /--upstream-keepalive DURATION +how long an idle keep-alive connection to a pod is kept \(0: no keep-alive, .*each connection to a pod closes once its response is done\)/);
  assert.match(helpText(), /--shutdown-grace DURATION +on SIGTERM, time to finish requests in flight before exiting; .*\(0: no wait: connections close at once and requests in flight are cut\)/);
});

test('--trusted-proxies: every entry must be an address or a CIDR', () => {
  assert.equal(parseOptions(['--trusted-proxies', '10.0.0.0/8, 192.168.1.7 fd00::/8'], {}).trustedProxies, '10.0.0.0/8, 192.168.1.7 fd00::/8');
  assert.match(parseError(['--trusted-proxies', '10.0.0.0/8,10.0.0.0/99']), /^--trusted-proxies: invalid value "10\.0\.0\.0\/8,10\.0\.0\.0\/99": expected IP addresses or CIDRs, comma-separated \("10\.0\.0\.0\/99" is neither\)$/);
  assert.match(parseError([], { PORTICO_TRUSTED_PROXIES: 'lb.internal' }), /"lb\.internal" is neither/);
});

test('a Kubernetes service link in a flag variable is named as such', () => {
  const message = parseError([], { PORTICO_HTTP_PORT: 'tcp://10.96.0.12:80' });
  assert.match(message, /^\$PORTICO_HTTP_PORT: invalid value "tcp:\/\/10\.96\.0\.12:80": expected .*service link: set enableServiceLinks: false/);
});

test('unknown PORTICO_* variables are listed, service links of Services named portico* are not', () => {
  const env = {
    PORTICO_HTTP_PROT: '9000',
    PORTICO_HTTP_PORT: '9000',
    PORTICO_SERVICE_HOST: '10.96.0.1',
    PORTICO_SERVICE_PORT_HTTP: '80',
    PORTICO_PORT: 'tcp://10.96.0.1:80',
    PORTICO_PORT_80_TCP_ADDR: '10.96.0.1',
    PORTICO_METRICS_SERVICE_PORT: '9090',
    HOME: '/root',
  };
  assert.deepEqual(unknownEnvironment(env), ['PORTICO_HTTP_PROT']);
});

test('--help lists every flag with its variable', () => {
  const help = helpText();
  assert.match(help, /--trusted-proxies CIDRS .*\[\$PORTICO_TRUSTED_PROXIES\]/);
  assert.match(help, /--http-port N .*\(default 8080\)\s+\[\$PORTICO_HTTP_PORT\]/);
});

test('the CLI: a bad value exits 2 with one line on stderr', () => {
  const bad = spawnSync(process.execPath, [BIN, '--trusted-proxies', '10.0.0.0/99'], { encoding: 'utf8', timeout: 20_000 });
  assert.equal(bad.status, 2);
  assert.equal(bad.stdout, '');
  assert.deepEqual(bad.stderr.trim().split('\n'), ['portico: --trusted-proxies: invalid value "10.0.0.0/99": expected IP addresses or CIDRs, comma-separated ("10.0.0.0/99" is neither)']);
});

test('the CLI: an unknown PORTICO_* variable is warned about once, and portico runs; a second SIGTERM exits at once', async () => {
  // A pod that never answers: a request to it stays in flight.
  let reached: () => void = () => {};
  const podReached = new Promise<void>((r) => (reached = r));
  const silent = net.createServer((s) => {
    s.on('error', () => {});
    s.once('data', () => reached());
  });
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  const dir = new ManifestDir();
  dir.write('app.yaml', [
    ingressClass('portico'),
    ingress('slow', { rules: [{ host: 'slow.local', paths: [{ path: '/', service: 'slow' }] }] }),
    ...serviceWithEndpoints('slow', [(silent.address() as net.AddressInfo).port]),
  ]);
  const portico = await startPortico(['--manifests', dir.path, '--shutdown-grace', '30s'], { PORTICO_ACESS_LOG: 'false' });
  try {
    assert.deepEqual(portico.stderr, [], 'nothing in plain text');
    const warning = portico.logs.find((l) => l.variable === 'PORTICO_ACESS_LOG');
    assert.equal(warning?.msg, '$PORTICO_ACESS_LOG is not a portico setting and is ignored (see --help)', 'a JSON log line');
    const socket = net.connect(portico.http, '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    socket.on('error', () => {});
    socket.write('GET / HTTP/1.1\r\nHost: slow.local\r\n\r\n');
    await podReached;
    const started = Date.now();
    const exited = new Promise<number | null>((resolve) => portico.child.once('exit', (code) => resolve(code)));
    portico.child.kill('SIGTERM');
    await portico.waitForLog((l) => l.msg === 'shutting down: no new connections, finishing requests in flight');
    portico.child.kill('SIGTERM');
    assert.equal(await exited, 143);
    assert.ok(Date.now() - started < 20_000, 'did not wait for the 30 s grace period');
    socket.destroy();
  } finally {
    await portico.stop();
    silent.close();
    dir.cleanup();
  }
});

test('the CLI: an unreadable or broken --kubeconfig exits 1 with one line naming it', () => {
  const dir = mkdtempSync(join(tmpdir(), 'portico-kubeconfig-'));
  try {
    const broken = join(dir, 'config');
    writeFileSync(broken, 'clusters: [\n');
    for (const [path, reason] of [[join(dir, 'missing'), /no such file$/], [broken, /cannot load the kubeconfig: .+/]] as const) {
      const r = spawnSync(process.execPath, [BIN, '--kubeconfig', path, '--http-port', 'off', '--https-port', 'off', '--admin-port', 'off'], { encoding: 'utf8', timeout: 20_000 });
      assert.equal(r.status, 1);
      const lines = r.stderr.trim().split('\n');
      assert.equal(lines.length, 1, r.stderr);
      assert.ok(lines[0]!.startsWith(`portico: --kubeconfig ${path}: cannot load the kubeconfig: `), lines[0]);
      assert.match(lines[0]!, reason);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the README lists the flags exactly as --help prints them', async () => {
  const { readFileSync } = await import('node:fs');
  const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');
  const section = readme.slice(readme.indexOf('## Flags'));
  const block = section.slice(section.indexOf('```\n') + 4, section.indexOf('```', section.indexOf('```\n') + 4));
  const help = helpText().split('\n');
  const first = help.findIndex((l) => l.startsWith('  --'));
  assert.equal(block.trimEnd(), help.slice(first).join('\n').trimEnd());
});
