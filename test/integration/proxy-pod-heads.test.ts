// A pod's response head, as the client sees it through the proxy. A plain head (one
// Content-Length, nothing hop-by-hop but Connection: keep-alive and Keep-Alive: src/http1/response-head.ts)
// goes on as the pod wrote its lines, byte for byte; any other head, or one a policy
// changes, goes through llhttp and the header pairs. Either way the client gets the same
// headers, and one pod connection carries them all.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import type { Problem } from '../../src/model/config.ts';
import { parsePolicies } from '../../src/middleware/registry.ts';
import { backend, route, routing, startProxy, type Proxy } from './proxy-harness.ts';

const ANSWERS: Record<string, string> = {
  '/plain': 'HTTP/1.1 200 OK\r\nX-Mixed-Case: yes\r\nX-Spaced:   a  b\r\nConnection: keep-alive\r\nX-Latin: caf\xe9\r\nContent-Length: 5\r\n\r\nhello',
  '/dated': 'HTTP/1.1 404 Gone Fishing\r\nDate: Thu, 01 Jan 2026 00:00:00 GMT\r\nContent-Length: 2\r\n\r\nno',
  '/chunked': 'HTTP/1.1 200 OK\r\nX-Mixed-Case: yes\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n',
  // What node:http sends by default.
  '/keep-alive-hint': 'HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nKeep-Alive: timeout=60\r\nX-Mixed-Case: yes\r\nContent-Length: 5\r\n\r\nhello',
  '/trailer-announced': 'HTTP/1.1 200 OK\r\nTrailer: X-Sum\r\nX-Mixed-Case: yes\r\nContent-Length: 5\r\n\r\nhello',
};

/** A pod on raw TCP that answers each request head by its path, and counts its connections. */
async function startScriptedPod(): Promise<{ port: number; connections: () => number; close(): Promise<void> }> {
  let connections = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    connections++;
    sockets.add(socket);
    let pending = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      pending += chunk;
      let end: number;
      while ((end = pending.indexOf('\r\n\r\n')) !== -1) {
        const path = pending.slice(0, end).split(' ')[1]!;
        pending = pending.slice(end + 4);
        socket.write(ANSWERS[path] ?? 'HTTP/1.1 500 No Script\r\nContent-Length: 0\r\n\r\n', 'latin1');
      }
    });
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    connections: () => connections,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** One request on a connection of its own (Connection: close); the answer's head lines and body, as bytes arrived. */
function fetchRaw(port: number, host: string, path: string): Promise<{ lines: string[]; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let all = '';
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => (all += d));
    socket.on('error', reject);
    socket.on('end', () => {
      const end = all.indexOf('\r\n\r\n');
      resolve({ lines: all.slice(0, end).split('\r\n'), body: all.slice(end + 4) });
    });
    socket.write(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
  });
}

/** The values of header `name` (lowercase) among head lines, trimmed. */
function values(lines: string[], name: string): string[] {
  return lines.filter((l) => l.toLowerCase().startsWith(`${name}:`)).map((l) => l.slice(name.length + 1).trim());
}

describe('a pod response head through the proxy', () => {
  let pod: Awaited<ReturnType<typeof startScriptedPod>>;
  let proxy: Proxy;

  before(async () => {
    pod = await startScriptedPod();
    const problems: Problem[] = [];
    const object = { kind: 'Ingress', namespace: 'default', name: 'test' };
    const policies = parsePolicies({ 'portico.dev/response-headers': 'X-Frame-Options: DENY' }, object, problems);
    // This one replaces a header the pod sends.
    const replacing = parsePolicies({ 'portico.dev/response-headers': 'x-mixed-case: policy' }, object, problems);
    assert.deepEqual(problems, []);
    const b = backend('pod', [pod.port]);
    proxy = await startProxy(routing([route('pods.example', '/', b), route('policy.example', '/', b, { policies }), route('replacing.example', '/', b, { policies: replacing })]));
  });
  after(async () => {
    await proxy?.close();
    await pod?.close();
  });

  test('a plain head: the pod\'s lines byte for byte, without its Connection, with a Date added', async () => {
    const r = await fetchRaw(proxy.port, 'pods.example', '/plain');
    assert.equal(r.body, 'hello');
    assert.equal(r.lines[0], 'HTTP/1.1 200 OK');
    assert.deepEqual(r.lines.slice(1, 5), ['X-Mixed-Case: yes', 'X-Spaced:   a  b', 'X-Latin: caf\xe9', 'Content-Length: 5']);
    assert.match(r.lines[5]!, /^date: \w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d GMT$/);
    assert.deepEqual(r.lines.slice(6), ['connection: close'], 'the client asked to close; the pod\'s keep-alive is not passed on');
  });

  test('a plain head with its own Date and reason phrase: both kept, no second Date', async () => {
    const r = await fetchRaw(proxy.port, 'pods.example', '/dated');
    assert.equal(r.lines[0], 'HTTP/1.1 404 Gone Fishing');
    assert.deepEqual(r.lines.slice(1), ['Date: Thu, 01 Jan 2026 00:00:00 GMT', 'Content-Length: 2', 'connection: close']);
    assert.equal(r.body, 'no');
  });

  test('a plain head with a Keep-Alive hint (node:http\'s): the lines without Connection and Keep-Alive', async () => {
    const r = await fetchRaw(proxy.port, 'pods.example', '/keep-alive-hint');
    assert.deepEqual(r.lines.slice(0, 3), ['HTTP/1.1 200 OK', 'X-Mixed-Case: yes', 'Content-Length: 5']);
    assert.deepEqual(values(r.lines, 'keep-alive'), [], 'Keep-Alive is hop-by-hop');
    assert.deepEqual(values(r.lines, 'connection'), ['close'], 'only the answer to the client\'s own Connection: close');
    assert.equal(r.body, 'hello');
  });

  test('a policy that adds a header the pod does not send: the pod\'s lines as they are, then the policy\'s', async () => {
    const r = await fetchRaw(proxy.port, 'policy.example', '/plain');
    assert.deepEqual(r.lines.slice(0, 6), ['HTTP/1.1 200 OK', 'X-Mixed-Case: yes', 'X-Spaced:   a  b', 'X-Latin: caf\xe9', 'Content-Length: 5', 'X-Frame-Options: DENY']);
    assert.equal(r.body, 'hello');
  });

  test('heads llhttp reads (chunked, one announcing trailers) and a policy that replaces a pod\'s header: the same headers, as pairs', async () => {
    const chunked = await fetchRaw(proxy.port, 'pods.example', '/chunked');
    assert.deepEqual(values(chunked.lines, 'x-mixed-case'), ['yes']);
    assert.deepEqual(values(chunked.lines, 'transfer-encoding'), ['chunked'], 'framing redone by portico');
    assert.equal(chunked.body, '5\r\nhello\r\n0\r\n\r\n');
    const announced = await fetchRaw(proxy.port, 'pods.example', '/trailer-announced');
    assert.deepEqual(values(announced.lines, 'x-mixed-case'), ['yes']);
    assert.deepEqual(values(announced.lines, 'trailer'), [], 'trailers are not passed on, nor is their announcement');
    assert.equal(announced.body, 'hello');
    const policy = await fetchRaw(proxy.port, 'replacing.example', '/plain');
    assert.deepEqual(values(policy.lines, 'x-mixed-case'), ['policy'], 'the policy\'s value in place of the pod\'s');
    assert.deepEqual(values(policy.lines, 'x-spaced'), ['a  b']);
    assert.deepEqual(values(policy.lines, 'x-latin'), ['caf\xe9']);
    assert.deepEqual(values(policy.lines, 'content-length'), ['5']);
    assert.equal(policy.body, 'hello');
    // Plain and llhttp-read answers alternated on the pod's connection, which stayed in step.
    const again = await fetchRaw(proxy.port, 'pods.example', '/plain');
    assert.equal(again.body, 'hello');
    assert.equal(pod.connections(), 1, 'one pod connection carried every answer');
  });
});
