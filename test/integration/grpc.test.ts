// Black-box: gRPC end to end through the real CLI, a real gRPC client and server
// (@grpc/grpc-js): the client speaks h2c to portico's plain port, portico speaks h2c to
// the pod (portico.dev/upstream-protocol, or the Service port's appProtocol).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import { startPortico, type PorticoProcess } from '../support/portico-process.ts';
import { ManifestDir, ingress, ingressClass, serviceWithEndpoints, type Obj } from '../support/objects.ts';
import { echoClient, grpc, startGrpcServer, unary, type EchoClient, type GrpcServer } from '../support/grpc.ts';

const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A Service whose port says appProtocol kubernetes.io/h2c, and its endpoint. */
function h2cService(name: string, port: number): Obj[] {
  const [service, slice] = serviceWithEndpoints(name, [port]) as [Obj & { spec: { ports: Record<string, unknown>[] } }, Obj];
  service.spec.ports[0]!.appProtocol = 'kubernetes.io/h2c';
  return [service, slice];
}

describe('gRPC through portico', () => {
  const dir = new ManifestDir();
  let portico: PorticoProcess;
  let pod: GrpcServer;
  let other: GrpcServer;
  const clients: EchoClient[] = [];
  const client = (authority: string) => {
    const c = echoClient(portico.http, authority);
    clients.push(c);
    return c;
  };

  before(async () => {
    pod = await startGrpcServer('pod-a');
    other = await startGrpcServer('pod-b');
    dir.write('class.yaml', [ingressClass('portico')]);
    dir.write('grpc.yaml', [
      ingress('grpc', { rules: [{ host: 'grpc.test', paths: [{ path: '/', service: 'grpc' }] }, { host: 'down.test', paths: [{ path: '/', service: 'down' }] }, { host: 'refused.test', paths: [{ path: '/', service: 'refused' }] }] }, { annotations: { 'portico.dev/upstream-protocol': 'h2c', 'portico.dev/max-body-size': '8m' } }),
      ...serviceWithEndpoints('grpc', [pod.port]),
      { apiVersion: 'v1', kind: 'Service', metadata: { name: 'down', namespace: 'default' }, spec: { ports: [{ name: 'http', port: 80 }] } },
      ...serviceWithEndpoints('refused', [9]),
      ingress('by-app-protocol', { rules: [{ host: 'app.test', paths: [{ path: '/', service: 'app' }] }] }),
      // A body limit smaller than a message: small calls arrive whole with their head and go to the pod as one buffer.
      ingress('tiny', { rules: [{ host: 'tiny.test', paths: [{ path: '/', service: 'grpc' }] }] }, { annotations: { 'portico.dev/upstream-protocol': 'h2c', 'portico.dev/max-body-size': '64' } }),
      ...h2cService('app', other.port),
    ]);
    portico = await startPortico(['--manifests', dir.path]);
  });

  after(async () => {
    for (const c of clients) c.close();
    await portico?.stop();
    await Promise.all([pod?.close(), other?.close()]);
    dir.cleanup();
  });

  test('unary: the answer, its header metadata and its trailing metadata reach the client', async () => {
    const c = client('grpc.test');
    const metadata = new grpc.Metadata();
    const got = await new Promise<{ res?: Buffer; headers?: grpc.Metadata; status?: grpc.StatusObject }>((resolve) => {
      const out: { res?: Buffer; headers?: grpc.Metadata; status?: grpc.StatusObject } = {};
      const call = c.unary(Buffer.from('hello'), metadata, {}, (err, res) => {
        assert.equal(err, null);
        out.res = res;
      });
      call.on('metadata', (m: grpc.Metadata) => (out.headers = m));
      call.on('status', (s: grpc.StatusObject) => {
        out.status = s;
        resolve(out);
      });
    });
    assert.equal(got.res?.toString(), 'pod-a:/test.Echo/Unary:hello');
    assert.deepEqual(got.headers?.get('x-server'), ['pod-a']);
    assert.equal(got.status?.code, grpc.status.OK);
    assert.deepEqual(got.status?.metadata.get('x-trailer'), ['from pod-a']);
  });

  test('an error status, its message and trailing metadata reach the client unchanged', async () => {
    const { err, trailers } = await unary(client('grpc.test'), 'fail', Buffer.from('x'));
    assert.equal(err?.code, grpc.status.NOT_FOUND);
    assert.equal(err?.details, 'no such thing');
    assert.deepEqual(trailers?.get('x-reason'), ['asked to fail']);
  });

  test('server streaming, client streaming and bidi streaming', async () => {
    const c = client('grpc.test');
    const messages: string[] = [];
    await new Promise<void>((resolve, reject) => {
      const call = c.serverStream(Buffer.from('5'));
      call.on('data', (b: Buffer) => messages.push(b.toString()));
      call.on('error', reject);
      call.on('end', () => resolve());
    });
    assert.deepEqual(messages, [0, 1, 2, 3, 4].map((i) => `pod-a message ${i}`));

    const summary = await new Promise<string>((resolve, reject) => {
      const call = c.clientStream(new grpc.Metadata(), {}, (err, res) => (err ? reject(err) : resolve(res!.toString())));
      for (let i = 0; i < 10; i++) call.write(Buffer.alloc(100_000, i));
      call.end();
    });
    assert.equal(summary, '10 messages, 1000000 bytes');

    // Bidi: each message is answered before the next is sent (true full duplex).
    const bidi = c.bidi();
    const replies: string[] = [];
    for (let i = 0; i < 5; i++) {
      const reply = new Promise<string>((resolve) => bidi.once('data', (b: Buffer) => resolve(b.toString())));
      bidi.write(Buffer.from(`ping ${i}`));
      replies.push(await reply);
    }
    const ended = new Promise<void>((resolve) => bidi.on('status', () => resolve()));
    bidi.end();
    await ended;
    assert.deepEqual(replies, [0, 1, 2, 3, 4].map((i) => `echo ping ${i}`));
  });

  test('a message over the body limit is refused with RESOURCE_EXHAUSTED, not forwarded', async () => {
    const { err } = await unary(client('grpc.test'), 'unary', Buffer.alloc(9 * 1024 * 1024, 'x'));
    assert.equal(err?.code, grpc.status.RESOURCE_EXHAUSTED);
    assert.match(err!.details, /larger than the limit/);
  });

  test('a small call, whose body arrives with its head, is held to the body limit too: within it the pod gets it exact, over it RESOURCE_EXHAUSTED', async () => {
    const c = client('tiny.test');
    const within = await unary(c, 'unary', Buffer.from('0123456789'.repeat(5)));
    assert.equal(within.err, null);
    assert.equal(within.res?.toString(), 'pod-a:/test.Echo/Unary:' + '0123456789'.repeat(5));
    const over = await unary(c, 'unary', Buffer.alloc(100, 'x'));
    assert.equal(over.err?.code, grpc.status.RESOURCE_EXHAUSTED);
    assert.match(over.err!.details, /larger than the limit/);
  });

  test('4 MiB messages pass both ways', async () => {
    const big = Buffer.alloc(4 * 1024 * 1024, 'g');
    const { err, res } = await unary(client('grpc.test'), 'unary', big);
    assert.equal(err, null);
    assert.equal(res!.length, big.length + 'pod-a:/test.Echo/Unary:'.length);
  });

  test('a client cancel reaches the pod', async () => {
    const c = client('grpc.test');
    const call = c.slow(Buffer.from('cancel-me'), new grpc.Metadata(), {}, () => {});
    await delay(300);
    call.cancel();
    const until = Date.now() + 5000;
    while (!pod.cancelled.includes('cancel-me') && Date.now() < until) await delay(20);
    assert.ok(pod.cancelled.includes('cancel-me'), 'the pod saw the cancellation');
  });

  test('grpc-timeout is honoured by portico: DEADLINE_EXCEEDED, and the pod is told', async () => {
    // A raw HTTP/2 client, so that the deadline is enforced by nobody but portico.
    const session = http2.connect(`http://127.0.0.1:${portico.http}`);
    try {
      const frame = Buffer.alloc(5 + 'deadline'.length);
      frame.writeUInt32BE('deadline'.length, 1);
      frame.write('deadline', 5);
      const stream = session.request({ ':method': 'POST', ':path': '/test.Echo/Slow', ':authority': 'grpc.test', 'content-type': 'application/grpc', te: 'trailers', 'grpc-timeout': '300m' });
      stream.end(frame);
      const started = Date.now();
      const result = await new Promise<{ status: number; grpcStatus: string | undefined }>((resolve, reject) => {
        let status = 0;
        let grpcStatus: string | undefined;
        stream.on('response', (h) => {
          status = Number(h[':status']);
          grpcStatus = h['grpc-status'] as string | undefined;
        });
        stream.on('trailers', (t) => (grpcStatus = t['grpc-status'] as string | undefined));
        stream.on('error', reject);
        stream.on('close', () => resolve({ status, grpcStatus }));
        stream.resume();
      });
      assert.equal(result.status, 200);
      assert.equal(result.grpcStatus, String(grpc.status.DEADLINE_EXCEEDED));
      assert.ok(Date.now() - started < 4000, 'well before the pod would have answered (5 s)');
    } finally {
      session.close();
    }
  });

  test('no ready pod, or a pod that refuses: UNAVAILABLE in a trailers-only answer, never an HTML 503/502', async () => {
    for (const host of ['down.test', 'refused.test']) {
      const { err } = await unary(client(host), 'unary', Buffer.from('x'));
      assert.equal(err?.code, grpc.status.UNAVAILABLE, host);
    }
    // On the wire: HTTP 200, content-type application/grpc, grpc-status 14 in the one HEADERS frame.
    const session = http2.connect(`http://127.0.0.1:${portico.http}`);
    try {
      const stream = session.request({ ':method': 'POST', ':path': '/test.Echo/Unary', ':authority': 'down.test', 'content-type': 'application/grpc', te: 'trailers' });
      stream.end(Buffer.alloc(5));
      const [headers, flags] = await new Promise<[http2.IncomingHttpHeaders, number]>((resolve) => stream.on('response', (h, f) => resolve([h, f])));
      assert.equal(headers[':status'], 200);
      assert.equal(headers['content-type'], 'application/grpc');
      assert.equal(headers['grpc-status'], '14');
      assert.ok(flags & http2.constants.NGHTTP2_FLAG_END_STREAM, 'trailers-only: the HEADERS frame ends the stream');
      stream.resume();
    } finally {
      session.close();
    }
  });

  test('an unknown host is UNIMPLEMENTED for a gRPC client', async () => {
    const { err } = await unary(client('nowhere.test'), 'unary', Buffer.from('x'));
    assert.equal(err?.code, grpc.status.UNIMPLEMENTED);
  });

  test('a Service port with appProtocol kubernetes.io/h2c carries gRPC without an annotation', async () => {
    const { err, res } = await unary(client('app.test'), 'unary', Buffer.from('hi'));
    assert.equal(err, null);
    assert.equal(res?.toString(), 'pod-b:/test.Echo/Unary:hi');
  });
});
