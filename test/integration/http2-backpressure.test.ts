// Memory per HTTP/2 stream is bounded: an h2c client that stops reading a large answer
// holds the pod back (flow control, then back-pressure through portico), whether the pod
// speaks HTTP/1.1 or HTTP/2, and the whole answer still arrives once the client reads.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { startPortico, type PorticoProcess } from '../support/portico-process.ts';
import { ManifestDir, ingress, ingressClass, serviceWithEndpoints } from '../support/objects.ts';
import { h2Connect } from '../support/h2.ts';

const TOTAL = 64 * 1024 * 1024;
const CHUNK = Buffer.alloc(256 * 1024, 'p');
const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Writes TOTAL bytes as fast as the connection takes them; `written` is what it handed over so far. */
interface Pod {
  port: number;
  written: number;
  close(): Promise<void>;
}

function pump(write: (chunk: Buffer) => boolean, onDrain: (resume: () => void) => void, end: () => void, pod: Pod): void {
  const next = (): void => {
    while (pod.written < TOTAL) {
      pod.written += CHUNK.length;
      if (!write(CHUNK)) {
        onDrain(next);
        return;
      }
    }
    end();
  };
  next();
}

async function http1Pod(): Promise<Pod> {
  const pod: Pod = { port: 0, written: 0, close: async () => {} };
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(TOTAL) });
    pump((c) => res.write(c), (resume) => res.once('drain', resume), () => res.end(), pod);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  pod.port = (server.address() as AddressInfo).port;
  pod.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return pod;
}

async function h2cPod(): Promise<Pod> {
  const pod: Pod = { port: 0, written: 0, close: async () => {} };
  const server = http2.createServer();
  server.on('stream', (stream) => {
    stream.on('error', () => {});
    stream.respond({ ':status': 200, 'content-type': 'application/octet-stream' });
    pump((c) => stream.write(c), (resume) => stream.once('drain', resume), () => stream.end(), pod);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  pod.port = (server.address() as AddressInfo).port;
  pod.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return pod;
}

/** Polls until `read()` stops changing for a while (the pod is held back), and returns it. */
async function settled(read: () => number): Promise<number> {
  let last = -1;
  for (let i = 0; i < 100; i++) {
    const now = read();
    if (now === last) return now;
    last = now;
    await delay(250);
  }
  throw new Error(`still growing after 25 s: ${last}`);
}

describe('HTTP/2: a client that stops reading holds the pod back', () => {
  const dir = new ManifestDir();
  let portico: PorticoProcess;
  let h1: Pod;
  let h2: Pod;

  before(async () => {
    h1 = await http1Pod();
    h2 = await h2cPod();
    dir.write('apps.yaml', [
      ingressClass('portico'),
      ingress('h1', { rules: [{ host: 'h1.local', paths: [{ path: '/', service: 'h1' }] }] }),
      ingress('h2', { rules: [{ host: 'h2.local', paths: [{ path: '/', service: 'h2' }] }] }, { annotations: { 'portico.dev/upstream-protocol': 'h2c' } }),
      ...serviceWithEndpoints('h1', [h1.port]),
      ...serviceWithEndpoints('h2', [h2.port]),
    ]);
    portico = await startPortico(['--manifests', dir.path]);
  });

  after(async () => {
    await portico?.stop();
    await h1?.close();
    await h2?.close();
    dir.cleanup();
  });

  for (const [name, host, pod] of [['an HTTP/1.1 pod', 'h1.local', () => h1], ['an h2c pod', 'h2.local', () => h2]] as const) {
    test(`${name}: at most a few MiB of a 64 MiB answer leave the pod while the client does not read; then all of it arrives`, async () => {
      const session = await h2Connect(portico.http, false);
      try {
        const stream = session.request({ ':authority': host, ':path': '/big' });
        let received = 0;
        const firstByte = new Promise<void>((resolve) => stream.once('data', () => resolve()));
        stream.on('data', (c: Buffer) => (received += c.length));
        await firstByte;
        stream.pause();
        const heldAt = await settled(() => pod().written);
        assert.ok(heldAt < 16 * 1024 * 1024, `the pod was held back after ${heldAt} bytes`);
        assert.ok(heldAt < TOTAL);
        const ended = new Promise<void>((resolve) => stream.on('end', () => resolve()));
        stream.resume();
        await ended;
        assert.equal(received, TOTAL);
        assert.equal(pod().written, TOTAL);
      } finally {
        session.close();
      }
    });
  }
});
