// Upgrade requests: only websocket is tunnelled unless the route allows more
// (portico.dev/allowed-upgrades), and a tunnel opens only when the pod answers 101
// naming the protocol asked for. Until then nothing more the client sends reaches the
// pod: "Upgrade: h2c" cannot smuggle requests for other paths past routing.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { backend, route, routing, startProxy, type Proxy } from './proxy-harness.ts';

/** A pod on raw TCP: records everything it receives, answers each request head with `answer(head)`. */
interface RawPod {
  port: number;
  received: () => string;
  close(): Promise<void>;
}

function startRawPod(answer: (head: string) => string): Promise<RawPod> {
  let all = '';
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    let pending = '';
    let answered = false;
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      all += chunk;
      if (answered) return;
      pending += chunk;
      const end = pending.indexOf('\r\n\r\n');
      if (end === -1) return;
      answered = true;
      socket.write(answer(pending.slice(0, end)));
    });
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        port: (server.address() as net.AddressInfo).port,
        received: () => all,
        close: () =>
          new Promise<void>((r) => {
            for (const s of sockets) s.destroy();
            server.close(() => r());
          }),
      }),
    ),
  );
}

const SWITCH = (protocol: string) => `HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: ${protocol}\r\n\r\n`;

/** Sends `data` on one connection, then `after` once the first answer arrived; returns all the client read. */
function converse(port: number, host: string, data: string, afterAnswer = ''): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(data.replace('HOST', host)));
    let read = '';
    let sent = false;
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      read += chunk;
      if (!sent && afterAnswer !== '' && read.includes('\r\n\r\n')) {
        sent = true;
        socket.write(afterAnswer);
        setTimeout(() => socket.end(), 150);
      } else if (afterAnswer === '') {
        setTimeout(() => socket.end(), 150);
      }
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(read));
    setTimeout(() => socket.destroy(), 3000);
  });
}

const upgradeRequest = (protocol: string) => `GET /open HTTP/1.1\r\nHost: HOST\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: ${protocol}\r\nHTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n\r\n`;
const SMUGGLED = 'GET /admin HTTP/1.1\r\nHost: admin.internal\r\n\r\n';

describe('proxy: upgrade requests', () => {
  let obliging: RawPod; // switches to whatever is asked
  let liar: RawPod; // answers 101 with another protocol
  let refusing: RawPod; // answers 403
  let proxy: Proxy;

  before(async () => {
    obliging = await startRawPod((head) => SWITCH(/^upgrade: *(.*)$/im.exec(head)?.[1] ?? 'none'));
    liar = await startRawPod(() => SWITCH('foo'));
    refusing = await startRawPod(() => 'HTTP/1.1 403 Forbidden\r\nContent-Length: 2\r\n\r\nno');
    proxy = await startProxy(
      routing([
        route('obliging.test', '/', backend('obliging', [obliging.port])),
        route('h2c-allowed.test', '/', backend('obliging', [obliging.port]), { policies: [{ name: 'allowed-upgrades', config: { protocols: ['h2c', 'websocket'] } }] }),
        route('liar.test', '/', backend('liar', [liar.port])),
        route('refusing.test', '/', backend('refusing', [refusing.port])),
      ]),
    );
  });
  after(async () => {
    await proxy?.close();
    await Promise.all([obliging?.close(), liar?.close(), refusing?.close()]);
  });

  test('Upgrade: h2c is not tunnelled by default: the pod gets an ordinary request, and no bytes after it', async () => {
    const before = obliging.received().length;
    const read = await converse(proxy.port, 'obliging.test', upgradeRequest('h2c'), SMUGGLED);
    const seen = obliging.received().slice(before);
    assert.doesNotMatch(seen, /^upgrade:/im, 'the Upgrade header is not passed on');
    assert.doesNotMatch(seen, /admin\.internal/, 'the smuggled request never reached the pod');
    assert.doesNotMatch(read, /^HTTP\/1\.1 101/, 'no switch reached the client');
  });

  test('websocket is tunnelled when the pod switches to it', async () => {
    const read = await converse(proxy.port, 'obliging.test', upgradeRequest('websocket'), 'frame-bytes');
    assert.match(read, /^HTTP\/1\.1 101/);
    await new Promise((r) => setTimeout(r, 100));
    assert.match(obliging.received(), /frame-bytes/);
  });

  test('a 101 naming another protocol than the one asked for: 502, no tunnel', async () => {
    const read = await converse(proxy.port, 'liar.test', upgradeRequest('websocket'), SMUGGLED);
    assert.match(read, /^HTTP\/1\.1 502/);
    assert.doesNotMatch(liar.received(), /admin\.internal/);
  });

  test('a pod that refuses the upgrade: its answer is passed on, the client bytes after it are not', async () => {
    const read = await converse(proxy.port, 'refusing.test', upgradeRequest('websocket'), SMUGGLED);
    assert.match(read, /^HTTP\/1\.1 403/);
    assert.match(read, /\r\n\r\nno$/);
    assert.doesNotMatch(refusing.received(), /admin\.internal/);
  });

  test('portico.dev/allowed-upgrades opts a route in: h2c is tunnelled there', async () => {
    const before = obliging.received().length;
    const read = await converse(proxy.port, 'h2c-allowed.test', upgradeRequest('h2c'), 'PRI * HTTP/2.0');
    assert.match(read, /^HTTP\/1\.1 101/);
    await new Promise((r) => setTimeout(r, 100));
    const seen = obliging.received().slice(before);
    assert.match(seen, /^upgrade: h2c$/im);
    assert.match(seen, /PRI \* HTTP\/2\.0/);
  });
});
