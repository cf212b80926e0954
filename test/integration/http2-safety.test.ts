// Black box: what HTTP/2 clients must not get away with (RFC 9113; CVE-2023-44487 rapid
// reset, CVE-2024-27316 CONTINUATION flood), sent as raw frames since node:http2 refuses
// to send malformed ones. The pod records every request it gets: none of these may reach it,
// and other clients keep being served.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FLAG, FRAME, RawH2, frame, h2Connect, h2Request, hpack , webLocalBehindPortico } from '../support/h2.ts';

type Fields = [string, string][];

const PROTOCOL_ERROR = 1;
const REFUSED_STREAM = 7;
const ENHANCE_YOUR_CALM = 11;

function request(path: string, method = 'GET', authority = 'web.local'): Fields {
  return [[':method', method], [':scheme', 'https'], [':path', path], [':authority', authority]];
}

/** The error code of the RST_STREAM for `streamId`, or of the GOAWAY that ended the connection instead. */
async function streamError(raw: RawH2, streamId: number): Promise<{ frame: 'rst' | 'goaway'; code: number }> {
  const f = await raw.waitFor((f) => (f.type === FRAME.RST_STREAM && f.streamId === streamId) || f.type === FRAME.GOAWAY);
  assert.ok(f !== undefined, `stream ${streamId}: neither RST_STREAM nor GOAWAY`);
  return f.type === FRAME.RST_STREAM ? { frame: 'rst', code: f.payload.readUInt32BE(0) } : { frame: 'goaway', code: f.payload.readUInt32BE(4) };
}

/** A status from a response HEADERS frame (HPACK: :status 200 is static index 8, 0x88). */
async function answered200(raw: RawH2, streamId: number): Promise<boolean> {
  const f = await raw.waitFor((f) => f.type === FRAME.HEADERS && f.streamId === streamId);
  return f !== undefined && f.payload[0] === 0x88;
}

describe('HTTP/2 safety, raw frames against the CLI', () => {
  const site = webLocalBehindPortico();

  for (const secure of [true, false]) {
    const name = secure ? 'h2 (TLS)' : 'h2c';
    const port = () => (secure ? site.portico.https : site.portico.http);

    test(`${name}: malformed requests get a stream error and never reach the pod`, async () => {
      const cases: [string, (raw: RawH2, id: number, path: string) => void][] = [
        ['uppercase name', (raw, id, path) => raw.write(frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, id, hpack([...request(path), ['X-Upper', 'a']])))],
        ['connection header', (raw, id, path) => raw.write(frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, id, hpack([...request(path), ['connection', 'keep-alive']])))],
        ['transfer-encoding', (raw, id, path) => raw.write(frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, id, hpack([...request(path, 'POST'), ['transfer-encoding', 'chunked']])))],
        ['te other than trailers', (raw, id, path) => raw.write(frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, id, hpack([...request(path), ['te', 'gzip']])))],
        ['no :method', (raw, id, path) => raw.write(frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, id, hpack(request(path).slice(1))))],
        ['content-length without DATA', (raw, id, path) => raw.write(frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, id, hpack([...request(path, 'POST'), ['content-length', '5']])))],
        ['content-length below DATA', (raw, id, path) =>
          raw.write(frame(FRAME.HEADERS, FLAG.END_HEADERS, id, hpack([...request(path, 'POST'), ['content-length', '5']])), frame(FRAME.DATA, FLAG.END_STREAM, id, Buffer.from('0123456789GET /smuggled HTTP/1.1\r\n\r\n')))],
        ['content-length above DATA', (raw, id, path) =>
          raw.write(frame(FRAME.HEADERS, FLAG.END_HEADERS, id, hpack([...request(path, 'POST'), ['content-length', '50']])), frame(FRAME.DATA, FLAG.END_STREAM, id, Buffer.from('0123456789')))],
      ];
      for (const [what, send] of cases) {
        const raw = await RawH2.open(port(), secure);
        try {
          const path = `/malformed/${what.replaceAll(' ', '-')}`;
          send(raw, 1, path);
          const error = await streamError(raw, 1);
          // A stream error, or for DATA beyond Content-Length nghttp2 ends the whole connection.
          assert.ok(error.frame === 'rst' ? error.code === PROTOCOL_ERROR : error.code !== 0, `${what}: ${JSON.stringify(error)}`);
        } finally {
          raw.close();
        }
      }
      const session = await h2Connect(port(), secure);
      try {
        assert.equal((await h2Request(session, { ':authority': 'web.local', ':path': '/after-malformed' })).status, 200, 'the pod answers');
      } finally {
        session.close();
      }
      assert.deepEqual(site.seen.filter((r) => r.path.startsWith('/malformed') || r.path === '/smuggled'), [], 'the pod never saw a malformed request');
    });

    test(`${name}: CR, LF and NUL in a value never reach the pod`, async () => {
      const raw = await RawH2.open(port(), secure);
      try {
        const values = ['a\r\nx-injected: 1', 'a\nx-injected: 1', 'a\0b', 'a\x01b'];
        for (const [i, value] of values.entries()) {
          raw.write(frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, 1 + 2 * i, hpack([...request(`/values/${i}`), ['x-evil', value]])));
        }
        // Streams are answered in any order; a last plain request shows the others were dealt with.
        const last = 1 + 2 * values.length;
        raw.write(frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, last, hpack(request('/values/done'))));
        assert.equal(await answered200(raw, last), true);
        await raw.waitFor((f) => f.streamId === last && (f.flags & FLAG.END_STREAM) !== 0);
        for (let i = 0; i < values.length; i++) await raw.waitFor((f) => f.streamId === 1 + 2 * i && ((f.flags & FLAG.END_STREAM) !== 0 || f.type === FRAME.RST_STREAM));
      } finally {
        raw.close();
      }
      // nghttp2 drops such a field (or the stream); either way no pod sees it.
      for (const r of site.seen.filter((r) => r.path.startsWith('/values/'))) {
        assert.equal(r.headers['x-injected'], undefined);
        assert.equal(r.headers['x-evil'], undefined);
      }
    });

    test(`${name}: SETTINGS advertise MAX_CONCURRENT_STREAMS 128 and it is enforced (REFUSED_STREAM, or GOAWAY PROTOCOL_ERROR)`, async () => {
      const raw = await RawH2.open(port(), secure);
      try {
        const settings = (await raw.waitFor((f) => f.type === FRAME.SETTINGS && (f.flags & FLAG.ACK) === 0))!;
        const values = new Map<number, number>();
        for (let at = 0; at + 6 <= settings.payload.length; at += 6) values.set(settings.payload.readUInt16BE(at), settings.payload.readUInt32BE(at + 2));
        assert.equal(values.get(3), 128, 'SETTINGS_MAX_CONCURRENT_STREAMS');
        assert.ok((values.get(6) ?? 0) > 0, 'SETTINGS_MAX_HEADER_LIST_SIZE');

        // 130 requests the pod holds for a while: opening the 129th breaks the advertised limit.
        const frames: Buffer[] = [];
        for (let i = 0; i < 130; i++) frames.push(frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, 1 + 2 * i, hpack(request(`/slow/${i}?delay=1s`))));
        raw.write(...frames);
        const refused = await streamError(raw, 1 + 2 * 129);
        assert.ok(refused.frame === 'rst' ? refused.code === REFUSED_STREAM : refused.code === PROTOCOL_ERROR, JSON.stringify(refused));
      } finally {
        raw.close();
      }
    });

    test(`${name}: a header list over the advertised size is a stream error; the connection goes on`, async () => {
      const raw = await RawH2.open(port(), secure);
      try {
        // A header list far over the advertised size, split over CONTINUATION frames.
        const id = 1 + 2 * 130;
        raw.write(frame(FRAME.HEADERS, 0, id, hpack(request('/huge-head'))));
        for (let k = 0; k < 6; k++) {
          const fields: Fields = [];
          for (let i = 0; i < 90; i++) fields.push([`x-h${k}-${i}`, 'v'.repeat(100)]);
          raw.write(frame(FRAME.CONTINUATION, k === 5 ? FLAG.END_HEADERS : 0, id, hpack(fields)));
        }
        assert.deepEqual(await streamError(raw, id), { frame: 'rst', code: ENHANCE_YOUR_CALM });
        raw.write(frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, id + 2, hpack(request('/after-huge-head'))));
        assert.equal(await answered200(raw, id + 2), true, 'the connection goes on');
      } finally {
        raw.close();
      }
      assert.equal(site.seen.filter((r) => r.path === '/huge-head').length, 0);
    });

    for (const attack of ['rapid reset', 'CONTINUATION flood'] as const) {
      test(`${name}: a ${attack} ends that connection with GOAWAY while another client keeps getting 200`, async () => {
        const bystander = await h2Connect(port(), secure);
        const raw = await RawH2.open(port(), secure);
        try {
          await raw.waitFor((f) => f.type === FRAME.SETTINGS);
          const served: number[] = [];
          const bystanderLoop = (async () => {
            for (let i = 0; i < 20; i++) served.push((await h2Request(bystander, { ':authority': 'web.local', ':path': `/bystander/${i}` })).status);
          })();
          bystanderLoop.catch(() => {});
          if (attack === 'rapid reset') {
            for (let burst = 0; burst < 10 && !raw.closed; burst++) {
              const frames: Buffer[] = [];
              for (let i = 0; i < 500; i++) {
                const id = 1 + 2 * (burst * 500 + i);
                frames.push(frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, id, hpack(request(`/reset/${id}`))), frame(FRAME.RST_STREAM, 0, id, Buffer.from([0, 0, 0, 8])));
              }
              raw.write(...frames);
              await new Promise((r) => setImmediate(r));
            }
          } else {
            raw.write(frame(FRAME.HEADERS, 0, 1, hpack(request('/flood'))));
            for (let i = 0; i < 20_000 && !raw.closed; i++) raw.write(frame(FRAME.CONTINUATION, 0, 1, i % 2 ? Buffer.alloc(0) : hpack([[`x-c${i}`, 'v']])));
          }
          // The GOAWAY can be lost: portico closes at once, and a socket closed with the
          // flood still unread goes out as a TCP reset, which may overtake it.
          const goaway = await raw.waitFor((f) => f.type === FRAME.GOAWAY);
          if (goaway !== undefined) assert.notEqual(goaway.payload.readUInt32BE(4), 0, 'GOAWAY with an error code');
          await raw.untilClosed();
          assert.ok(raw.closed, 'the abuser\'s connection is closed');
          await bystanderLoop;
          assert.deepEqual(served, Array(20).fill(200));
          assert.equal((await h2Request(bystander, { ':authority': 'web.local', ':path': '/bystander/after' })).status, 200);
        } finally {
          raw.close();
          bystander.close();
        }
        assert.equal(site.seen.filter((r) => r.path === '/flood').length, 0);
      });
    }
  }
});
