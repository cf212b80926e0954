// Black box: HTTP/2 clients against the real CLI, h2 over TLS (ALPN) on the HTTPS port
// and h2c (prior knowledge) on the plain port, into the same routing, policies, access
// log and metrics as HTTP/1.1, with HTTP/1.1 echo pods behind.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import http2, { type ClientHttp2Session } from 'node:http2';
import net from 'node:net';
import tls from 'node:tls';
import https from 'node:https';
import selfsigned from 'selfsigned';
import WebSocket from 'ws';
import { startEchoServer } from '../../examples/echo-server.ts';
import { eventually, startPortico, type PorticoProcess } from '../support/portico-process.ts';
import { ManifestDir, ingress, ingressClass, serviceWithEndpoints, tlsSecret } from '../support/objects.ts';
import { get } from '../support/http.ts';
import { FLAG, FRAME, RawH2, frame, h2Connect, h2Request, hpack } from '../support/h2.ts';
import { freePort, gateway, gatewayClass, httpRoute } from '../support/gateway-objects.ts';

type Echo = Awaited<ReturnType<typeof startEchoServer>>;

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('HTTP/2 from clients, black box', () => {
  const dir = new ManifestDir();
  let portico: PorticoProcess;
  let web: Echo;
  let api: Echo;

  before(async () => {
    web = await startEchoServer({ name: 'web' });
    api = await startEchoServer({ name: 'api' });
    dir.write('class.yaml', [ingressClass('portico')]);
    dir.write('apps.yaml', [
      ingress('web', { rules: [{ host: 'web.local', paths: [{ path: '/', service: 'web' }] }, { host: 'api.local', paths: [{ path: '/', service: 'api' }] }] }),
      ingress('policies', { rules: [{ host: 'policy.local', paths: [{ path: '/', service: 'web' }] }] }, { annotations: { 'portico.dev/response-headers': 'X-Policy: on', 'portico.dev/request-headers': 'X-From-Policy: yes' } }),
      ingress('denied', { rules: [{ host: 'denied.local', paths: [{ path: '/', service: 'web' }] }] }, { annotations: { 'portico.dev/ip-deny': '127.0.0.0/8' } }),
      ...serviceWithEndpoints('web', [web.port]),
      ...serviceWithEndpoints('api', [api.port]),
    ]);
    portico = await startPortico(['--manifests', dir.path, '--max-body-size', '64m']);
  });

  after(async () => {
    assert.equal(await portico?.stop(), 0, 'exits 0 on SIGTERM');
    await web?.close();
    await api?.close();
    dir.cleanup();
  });

  for (const secure of [true, false]) {
    const name = secure ? 'h2 over TLS (ALPN)' : 'h2c on the plain port';
    const port = () => (secure ? portico.https : portico.http);

    test(`${name}: :authority routes and is the Host the pod sees; the pod gets plain HTTP/1.1 headers`, async () => {
      const session = await h2Connect(port(), secure);
      try {
        if (secure) assert.equal((session.socket as unknown as { alpnProtocol: string }).alpnProtocol, 'h2');
        const w = await h2Request(session, { ':authority': 'web.local', ':path': '/a/b?x=1', te: 'trailers', 'x-custom': 'yes' });
        assert.equal(w.status, 200);
        const echo = w.json();
        assert.equal(echo.service, 'web');
        assert.equal(echo.path, '/a/b');
        assert.equal(echo.query, 'x=1');
        assert.equal(echo.host, 'web.local');
        assert.equal(echo.headers['x-custom'], 'yes');
        assert.equal(echo.headers.te, undefined, 'TE: trailers stays on the client connection');
        for (const h of Object.keys(echo.headers)) assert.ok(!h.startsWith(':'), `no pseudo-header upstream (${h})`);
        assert.equal(echo.headers['transfer-encoding'], undefined, 'a bodiless GET has no body framing');
        assert.equal(w.headers['x-pod'], echo.pod, 'response headers come back');
        assert.equal(w.headers.connection, undefined);
        const a = await h2Request(session, { ':authority': 'api.local', ':path': '/' });
        assert.equal(a.json().service, 'api', 'the same connection routes another host');
      } finally {
        session.close();
      }
    });

    test(`${name}: cookie crumbs are joined with "; " and X-Forwarded-* are set as for HTTP/1.1`, async () => {
      const session = await h2Connect(port(), secure);
      try {
        const echo = (await h2Request(session, { ':authority': 'web.local', ':path': '/', cookie: ['a=1', 'b=2', 'c=3'], 'x-forwarded-for': '6.6.6.6', 'x-forwarded-proto': 'gopher' })).json();
        assert.equal(echo.headers.cookie, 'a=1; b=2; c=3');
        assert.equal(echo.headers['x-forwarded-for'], '127.0.0.1', 'a client\'s own X-Forwarded-For is not trusted');
        assert.equal(echo.headers['x-real-ip'], '127.0.0.1');
        assert.equal(echo.headers['x-forwarded-proto'], secure ? 'https' : 'http');
        assert.equal(echo.headers['x-forwarded-host'], 'web.local');
        assert.equal(echo.headers['x-forwarded-port'], String(port()));
        assert.match(echo.headers['x-request-id'], /\S/);
      } finally {
        session.close();
      }
    });

    test(`${name}: 10 MiB up and down intact; HEAD; errors portico answers itself`, async () => {
      const session = await h2Connect(port(), secure);
      try {
        const up = randomBytes(10 * 1024 * 1024);
        const echo = (await h2Request(session, { ':authority': 'web.local', ':path': '/upload' }, up)).json();
        assert.equal(echo.bodyLength, up.length);
        assert.equal(echo.bodySha256, sha256(up));
        assert.equal(echo.headers['transfer-encoding'], 'chunked', 'a body without Content-Length goes chunked to an HTTP/1.1 pod');
        const sized = (await h2Request(session, { ':authority': 'web.local', ':path': '/upload', 'content-length': String(up.length) }, up)).json();
        assert.equal(sized.bodySha256, sha256(up));
        assert.equal(sized.headers['content-length'], String(up.length));
        const down = await h2Request(session, { ':authority': 'web.local', ':path': '/big?size=10485760' });
        assert.equal(down.status, 200);
        assert.equal(down.body.length, 10 * 1024 * 1024);
        assert.equal(sha256(down.body), sha256(Buffer.alloc(10 * 1024 * 1024, 'x')));
        const head = await h2Request(session, { ':method': 'HEAD', ':authority': 'web.local', ':path': '/big?size=1000' });
        assert.equal(head.status, 200);
        assert.equal(head.headers['content-length'], '1000');
        assert.equal(head.body.length, 0);
        const missing = await h2Request(session, { ':authority': 'nowhere.local', ':path': '/x' });
        assert.equal(missing.status, 404);
        assert.equal(missing.text(), 'no route for this host and path\n');
        const bad = await h2Request(session, { ':authority': 'web.local', ':path': '/a/../b' });
        assert.equal(bad.status, 400);
      } finally {
        session.close();
      }
    });

    test(`${name}: policies apply as for HTTP/1.1; a client that cancels a stream is logged 499`, async () => {
      const session = await h2Connect(port(), secure);
      try {
        const withPolicy = await h2Request(session, { ':authority': 'policy.local', ':path': '/p' });
        assert.equal(withPolicy.headers['x-policy'], 'on');
        assert.equal(withPolicy.json().headers['x-from-policy'], 'yes');
        assert.equal((await h2Request(session, { ':authority': 'denied.local', ':path': '/' })).status, 403);
        const path = `/cancelled-${secure ? 'h2' : 'h2c'}`;
        await new Promise<void>((resolve) => {
          const stream = session.request({ ':authority': 'web.local', ':path': `${path}?size=50000000` });
          stream.once('data', () => {
            stream.close(http2.constants.NGHTTP2_CANCEL);
            resolve();
          });
        });
        const line = await portico.waitForLog((l) => l.kind === 'access' && l.path === path);
        assert.equal(line.status, 499);
        assert.equal((await h2Request(session, { ':authority': 'web.local', ':path': '/after-cancel' })).status, 200, 'the connection goes on');
      } finally {
        session.close();
      }
    });

    test(`${name}: a small answer with Content-Length ends on its DATA frame (END_STREAM there, no empty DATA frame after it); a large one arrives whole`, async () => {
      const raw = await RawH2.open(port(), secure);
      try {
        // A small body (one read from the pod) and one of 100,000 bytes (many reads, and
        // flow control: the default window is 65,535 bytes, so the client must grant more).
        // Only the small one is held to a single closing DATA frame: behind flow control
        // node:http2 may end a stream with an empty DATA frame.
        const paths = ['/small', '/large?size=100000'];
        for (const [i, path] of paths.entries()) {
          const id = 1 + 2 * i;
          const request: [string, string][] = [[':method', 'GET'], [':scheme', secure ? 'https' : 'http'], [':path', path], [':authority', 'web.local']];
          raw.write(frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, id, hpack(request)));
          if (i === 1) {
            const grant = Buffer.alloc(4);
            grant.writeUInt32BE(200_000);
            raw.write(frame(FRAME.WINDOW_UPDATE, 0, 0, grant), frame(FRAME.WINDOW_UPDATE, 0, id, grant));
          }
          const last = await raw.waitFor((f) => f.streamId === id && (f.flags & FLAG.END_STREAM) !== 0);
          assert.ok(last !== undefined, `${path}: the stream ends`);
          const data = raw.frames.filter((f) => f.streamId === id && f.type === FRAME.DATA);
          assert.equal(last.type, FRAME.DATA, `${path}: END_STREAM is on a DATA frame`);
          if (i === 0) {
            assert.deepEqual(data.map((f) => f.flags & FLAG.END_STREAM), [FLAG.END_STREAM], `${path}: one DATA frame, with END_STREAM`);
            assert.ok(last.payload.length > 0, `${path}: it carries the body`);
          }
          const body = Buffer.concat(data.map((f) => f.payload));
          if (i === 0) assert.equal(JSON.parse(body.toString()).path, '/small');
          else assert.ok(body.equals(Buffer.alloc(100_000, 'x')), 'the whole large body, in order');
        }
      } finally {
        raw.close();
      }
    });

    test(`${name}: 100 concurrent streams on one connection all get their own answer`, async () => {
      const session = await h2Connect(port(), secure);
      try {
        const replies = await Promise.all(Array.from({ length: 100 }, (_, i) => h2Request(session, { ':authority': i % 2 ? 'web.local' : 'api.local', ':path': `/s/${i}` })));
        replies.forEach((r, i) => {
          assert.equal(r.status, 200);
          assert.equal(r.json().path, `/s/${i}`);
          assert.equal(r.json().service, i % 2 ? 'web' : 'api');
        });
      } finally {
        session.close();
      }
    });
  }

  test('HTTP/1.1 still works on both ports (TLS clients offering h2 and http/1.1, or none), WebSocket included', async () => {
    assert.equal((await get(portico.http, 'web.local', '/h1')).json().service, 'web');
    for (const ALPNProtocols of [undefined, ['http/1.1']]) {
      const reply = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const options = { host: '127.0.0.1', port: portico.https, path: '/h1-tls', headers: { host: 'web.local' }, rejectUnauthorized: false, ALPNProtocols, servername: 'web.local' };
        const req = https.get(options as https.RequestOptions, (res) => {
          let body = '';
          res.setEncoding('utf8').on('data', (d: string) => (body += d));
          res.on('end', () => resolve({ status: res.statusCode!, body }));
        });
        req.on('error', reject);
      });
      assert.equal(reply.status, 200);
      assert.equal(JSON.parse(reply.body).path, '/h1-tls');
    }
    const ws = new WebSocket(`ws://127.0.0.1:${portico.http}/chat`, { headers: { host: 'web.local' } });
    const echoed = await new Promise<string>((resolve, reject) => {
      ws.on('open', () => ws.send('hello'));
      ws.on('message', (m) => resolve(m.toString()));
      ws.on('error', reject);
    });
    ws.close();
    assert.match(echoed, /^web-\d+: hello$/);
  });

  test('an h2 request has its access-log line and is counted in the metrics', async () => {
    const session: ClientHttp2Session = await h2Connect(portico.http, false);
    try {
      assert.equal((await h2Request(session, { ':authority': 'web.local', ':path': '/logged-h2' })).status, 200);
    } finally {
      session.close();
    }
    const line = await portico.waitForLog((l) => l.kind === 'access' && l.path === '/logged-h2');
    assert.equal(line.status, 200);
    assert.equal(line.method, 'GET');
    assert.equal(line.host, 'web.local');
    assert.match(String(line.upstream), /^127\.0\.0\.1:\d+$/);
    const metrics = await (await fetch(`http://127.0.0.1:${portico.admin}/metrics`)).text();
    assert.match(metrics, /portico_requests_total\{[^}]*host="web\.local"[^}]*status="200"[^}]*\} [1-9]/);
  });
});

describe('HTTP/2: shutdown, PROXY protocol, flags', () => {
  test('SIGTERM sends GOAWAY; streams in flight (h2 and h2c) still get their whole answer', async () => {
    const dir = new ManifestDir();
    let slowArrived = 0;
    let bothArrived!: () => void;
    const inFlight = new Promise<void>((resolve) => (bothArrived = resolve));
    const web = await startEchoServer({ name: 'web', onRequest: (r) => r.path === '/slow' && ++slowArrived === 2 && bothArrived() });
    dir.write('class.yaml', [ingressClass('portico')]);
    dir.write('web.yaml', [ingress('web', { rules: [{ host: 'web.local', paths: [{ path: '/', service: 'web' }] }] }), ...serviceWithEndpoints('web', [web.port])]);
    const portico = await startPortico(['--manifests', dir.path, '--shutdown-grace', '10s']);
    try {
      const sessions = await Promise.all([h2Connect(portico.http, false), h2Connect(portico.https, true)]);
      const goaways = sessions.map((s) => new Promise<number>((resolve) => s.once('goaway', (code: number) => resolve(code))));
      const slow = sessions.map((s) => h2Request(s, { ':authority': 'web.local', ':path': '/slow?delay=500ms' }));
      await inFlight;
      const exited = portico.stop();
      assert.deepEqual(await Promise.all(goaways), [0, 0], 'GOAWAY NO_ERROR on both');
      for (const reply of await Promise.all(slow)) {
        assert.equal(reply.status, 200);
        assert.equal(reply.json().path, '/slow');
      }
      for (const s of sessions) s.close();
      assert.equal(await exited, 0);
    } finally {
      await portico.stop();
      await web.close();
      dir.cleanup();
    }
  });

  test('h2c after a PROXY protocol header: the client address is the one in the header', async () => {
    const dir = new ManifestDir();
    const web = await startEchoServer({ name: 'web' });
    dir.write('class.yaml', [ingressClass('portico')]);
    dir.write('web.yaml', [ingress('web', { rules: [{ host: 'web.local', paths: [{ path: '/', service: 'web' }] }] }), ...serviceWithEndpoints('web', [web.port])]);
    const portico = await startPortico(['--manifests', dir.path, '--proxy-protocol', '--trusted-proxies', '127.0.0.1/32']);
    try {
      const session = http2.connect(`http://127.0.0.1:${portico.http}`, {
        createConnection: () => {
          const socket = net.connect(portico.http, '127.0.0.1');
          socket.write('PROXY TCP4 203.0.113.7 127.0.0.1 40000 80\r\n');
          return socket;
        },
      });
      try {
        const echo = (await h2Request(session, { ':authority': 'web.local', ':path': '/proxied' })).json();
        assert.equal(echo.headers['x-real-ip'], '203.0.113.7');
        assert.equal(echo.headers['x-forwarded-for'], '203.0.113.7');
      } finally {
        session.close();
      }
    } finally {
      await portico.stop();
      await web.close();
      dir.cleanup();
    }
  });

  test('an idle h2 connection is closed after --client-idle-timeout, with GOAWAY', async () => {
    const dir = new ManifestDir();
    dir.write('class.yaml', [ingressClass('portico')]);
    const portico = await startPortico(['--manifests', dir.path, '--client-idle-timeout', '300ms']);
    try {
      const session = await h2Connect(portico.http, false);
      const goaway = new Promise<number>((resolve) => session.once('goaway', (code: number) => resolve(code)));
      const closed = new Promise<void>((resolve) => session.once('close', () => resolve()));
      assert.equal((await h2Request(session, { ':authority': 'nowhere.local', ':path': '/' })).status, 404);
      assert.equal(await goaway, 0);
      await closed;
    } finally {
      await portico.stop();
      dir.cleanup();
    }
  });

  test('--h2c=false and --http2=false: HTTP/1.1 only, and h2 clients are told no', async () => {
    const dir = new ManifestDir();
    dir.write('class.yaml', [ingressClass('portico')]);
    const portico = await startPortico(['--manifests', dir.path, '--h2c=false', '--http2=false']);
    try {
      const alpn = await new Promise<string | false | null>((resolve, reject) => {
        const socket = tls.connect({ host: '127.0.0.1', port: portico.https, rejectUnauthorized: false, servername: 'x.test', ALPNProtocols: ['h2', 'http/1.1'] }, () => {
          resolve(socket.alpnProtocol);
          socket.end();
        });
        socket.on('error', reject);
      });
      assert.equal(alpn, 'http/1.1');
      // The preface read as HTTP/1.1 is a request portico refuses, with an HTTP/1.1 answer.
      const answer = await new Promise<string>((resolve) => {
        const socket = net.connect(portico.http, '127.0.0.1', () => socket.write('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'));
        let text = '';
        socket.setEncoding('latin1').on('data', (d: string) => (text += d));
        socket.on('close', () => resolve(text));
        socket.on('error', () => resolve(text));
      });
      assert.match(answer, /^HTTP\/1\.1 [45]\d\d /);
      assert.equal((await get(portico.http, 'nowhere.local', '/')).status, 404);
    } finally {
      await portico.stop();
      dir.cleanup();
    }
  });
});

describe('HTTP/2 on Gateway listeners', () => {
  test('h2c on an HTTP listener and h2 on an HTTPS listener reach the HTTPRoute backend', async () => {
    const dir = new ManifestDir();
    const web = await startEchoServer({ name: 'web' });
    const httpPort = await freePort();
    const httpsPort = await freePort();
    const cert = await selfsigned.generate([{ name: 'commonName', value: 'gw.example.com' }], {
      keyType: 'ec',
      algorithm: 'sha256',
      extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: 'gw.example.com' }] }],
    });
    dir.write('gateway.yaml', [
      gatewayClass(),
      gateway('gw', [
        { name: 'http', port: httpPort, protocol: 'HTTP' },
        { name: 'https', port: httpsPort, protocol: 'HTTPS', hostname: 'gw.example.com', tls: { certificateRefs: [{ name: 'gw-cert' }] } },
      ]),
      tlsSecret('gw-cert', cert.cert, cert.private),
      ...serviceWithEndpoints('web', [web.port]),
      httpRoute('app', { parentRefs: [{ name: 'gw' }], hostnames: ['gw.example.com'], rules: [{ backendRefs: [{ name: 'web', port: 80 }] }] }),
    ]);
    const portico = await startPortico(['--manifests', dir.path]);
    try {
      await eventually(async () => (await get(httpPort, 'gw.example.com', '/')).status === 200, 10_000, 'the Gateway HTTP listener serves');
      for (const [port, secure] of [[httpPort, false], [httpsPort, true]] as const) {
        const session = await h2Connect(port, secure, { servername: 'gw.example.com' });
        try {
          const reply = await h2Request(session, { ':authority': 'gw.example.com', ':path': '/via-gateway' });
          assert.equal(reply.status, 200);
          assert.equal(reply.json().path, '/via-gateway');
          assert.equal(reply.json().headers['x-forwarded-proto'], secure ? 'https' : 'http');
        } finally {
          session.close();
        }
      }
    } finally {
      await portico.stop();
      await web.close();
      dir.cleanup();
    }
  });
});
