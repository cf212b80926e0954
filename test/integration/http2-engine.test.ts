// Black box: what portico's own HTTP/2 engine enforces beyond http2-safety.test.ts, in raw
// frames against the CLI: floods of frames that each cost an answer (SETTINGS, PING),
// HPACK table abuse, padding, stream ids, flow control both ways and frames where RFC 9113
// forbids them. Each abuse ends that connection (GOAWAY with the RFC's error code, or a
// stream error where the RFC says so); other clients keep being served.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FLAG, FRAME, RawH2, frame, h2Connect, h2Request, hpack , webLocalBehindPortico } from '../support/h2.ts';

type Fields = [string, string][];

const PROTOCOL_ERROR = 1;
const FLOW_CONTROL_ERROR = 3;
const COMPRESSION_ERROR = 9;
const ENHANCE_YOUR_CALM = 11;
const PADDED = 0x8;
const PING = 6;

function request(path: string, method = 'GET'): Fields {
  return [[':method', method], [':scheme', 'http'], [':path', path], [':authority', 'web.local']];
}

/** The GOAWAY's error code, or undefined when the connection closed without one arriving. */
async function goawayCode(raw: RawH2): Promise<number | undefined> {
  const f = await raw.waitFor((f) => f.type === FRAME.GOAWAY);
  await raw.untilClosed();
  assert.ok(raw.closed, 'the connection is closed');
  return f?.payload.readUInt32BE(4);
}

/** HEADERS or DATA with a pad-length byte and `pad` bytes of padding. */
function padded(type: number, flags: number, id: number, payload: Buffer, pad: number): Buffer {
  return frame(type, flags | PADDED, id, Buffer.concat([Buffer.from([pad]), payload, Buffer.alloc(pad)]));
}

describe('HTTP/2 engine: raw frames against the CLI', () => {
  const site = webLocalBehindPortico();

  test('a few PINGs are answered with their payload; a flood of PINGs or SETTINGS ends the connection with ENHANCE_YOUR_CALM while another client is served', async () => {
    const polite = await RawH2.open(site.portico.http, false);
    try {
      for (let i = 0; i < 10; i++) polite.write(frame(PING, 0, 0, Buffer.from(`ping-${i}!!`.padEnd(8, '.').slice(0, 8))));
      const acks = await polite.waitFor((_f) => polite.frames.filter((f) => f.type === PING && (f.flags & FLAG.ACK) !== 0).length === 10);
      assert.ok(acks !== undefined);
      assert.equal(polite.frames.find((f) => f.type === PING)!.payload.toString(), 'ping-0!!');
    } finally {
      polite.close();
    }
    const bystander = await h2Connect(site.portico.http, false);
    try {
      for (const flood of [frame(PING, 0, 0, Buffer.alloc(8)), frame(FRAME.SETTINGS, 0, 0)]) {
        const raw = await RawH2.open(site.portico.http, false);
        try {
          raw.write(...Array<Buffer>(20_000).fill(flood));
          const code = await goawayCode(raw);
          if (code !== undefined) assert.equal(code, ENHANCE_YOUR_CALM);
        } finally {
          raw.close();
        }
        assert.equal((await h2Request(bystander, { ':authority': 'web.local', ':path': '/bystander' })).status, 200);
      }
    } finally {
      bystander.close();
    }
  });

  test('a flood of empty DATA frames (CVE-2019-9518) ends the connection with ENHANCE_YOUR_CALM', async () => {
    const raw = await RawH2.open(site.portico.http, false);
    try {
      raw.write(frame(FRAME.HEADERS, FLAG.END_HEADERS, 1, hpack(request('/empty-data', 'POST'))), ...Array<Buffer>(1000).fill(frame(FRAME.DATA, 0, 1)));
      const code = await goawayCode(raw);
      if (code !== undefined) assert.equal(code, ENHANCE_YOUR_CALM);
    } finally {
      raw.close();
    }
  });

  test('HPACK: a table size update beyond the 4096 bytes allowed is a COMPRESSION_ERROR', async () => {
    const raw = await RawH2.open(site.portico.http, false);
    try {
      // 001xxxxx with 5-bit prefix: 31 + 0xe2 0x1f = 4097.
      raw.write(frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, 1, Buffer.concat([Buffer.from([0x3f, 0xe2, 0x1f]), hpack(request('/table-abuse'))])));
      assert.equal(await goawayCode(raw), COMPRESSION_ERROR);
    } finally {
      raw.close();
    }
    assert.equal(site.seen.filter((r) => r.path === '/table-abuse').length, 0);
  });

  test('padding: stripped from HEADERS and DATA (the pod gets the exact body); a pad length past the frame is a PROTOCOL_ERROR', async () => {
    const ok = await RawH2.open(site.portico.http, false);
    try {
      ok.write(
        padded(FRAME.HEADERS, FLAG.END_HEADERS, 1, hpack([...request('/padded', 'POST'), ['content-length', '5']]), 7),
        padded(FRAME.DATA, 0, 1, Buffer.from('hel'), 200),
        padded(FRAME.DATA, FLAG.END_STREAM, 1, Buffer.from('lo'), 0),
      );
      const data = await ok.waitFor((f) => f.type === FRAME.DATA && f.streamId === 1 && (f.flags & FLAG.END_STREAM) !== 0);
      assert.ok(data !== undefined);
      const echo = JSON.parse(Buffer.concat(ok.frames.filter((f) => f.type === FRAME.DATA && f.streamId === 1).map((f) => f.payload)).toString());
      assert.equal(echo.bodyLength, 5);
      assert.equal(echo.path, '/padded');
    } finally {
      ok.close();
    }
    for (const bad of [
      frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM | PADDED, 1, Buffer.concat([Buffer.from([200]), hpack(request('/bad-padding'))])),
      frame(FRAME.DATA, PADDED, 1, Buffer.from([1])),
    ]) {
      const raw = await RawH2.open(site.portico.http, false);
      try {
        if (bad[3] === FRAME.DATA) raw.write(frame(FRAME.HEADERS, FLAG.END_HEADERS, 1, hpack(request('/bad-padding', 'POST'))));
        raw.write(bad);
        assert.equal(await goawayCode(raw), PROTOCOL_ERROR);
      } finally {
        raw.close();
      }
    }
  });

  test('stream ids: an even id, or one below the last, is a PROTOCOL_ERROR', async () => {
    for (const ids of [[2], [5, 3]]) {
      const raw = await RawH2.open(site.portico.http, false);
      try {
        for (const id of ids) raw.write(frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, id, hpack(request(`/ids/${id}`))));
        assert.equal(await goawayCode(raw), PROTOCOL_ERROR, JSON.stringify(ids));
      } finally {
        raw.close();
      }
    }
  });

  test('frames where RFC 9113 forbids them: another frame inside a header block, DATA on stream 0, a PUSH_PROMISE from a client', async () => {
    const cases: Buffer[][] = [
      [frame(FRAME.HEADERS, 0, 1, hpack(request('/split'))), frame(PING, 0, 0, Buffer.alloc(8))],
      [frame(FRAME.DATA, 0, 0, Buffer.from('x'))],
      [frame(5, FLAG.END_HEADERS, 1, Buffer.concat([Buffer.from([0, 0, 0, 2]), hpack(request('/push'))]))],
    ];
    for (const frames of cases) {
      const raw = await RawH2.open(site.portico.http, false);
      try {
        raw.write(...frames);
        assert.equal(await goawayCode(raw), PROTOCOL_ERROR);
      } finally {
        raw.close();
      }
    }
    assert.equal(site.seen.filter((r) => r.path === '/split').length, 0);
  });

  test('flow control: a WINDOW_UPDATE that overflows a stream window is a stream error, one that overflows the connection window a connection error (FLOW_CONTROL_ERROR)', async () => {
    const raw = await RawH2.open(site.portico.http, false);
    try {
      // A request the pod holds for a while, so that its stream is open for the WINDOW_UPDATE.
      raw.write(frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, 1, hpack(request('/slow-window?delay=1s'))));
      raw.write(frame(FRAME.WINDOW_UPDATE, 0, 1, Buffer.from([0x7f, 0xff, 0xff, 0xff])));
      const rst = await raw.waitFor((f) => f.type === FRAME.RST_STREAM && f.streamId === 1);
      assert.equal(rst?.payload.readUInt32BE(0), FLOW_CONTROL_ERROR);
      raw.write(frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, 3, hpack(request('/after-window'))));
      assert.ok(await raw.waitFor((f) => f.type === FRAME.HEADERS && f.streamId === 3), 'the connection goes on');
    } finally {
      raw.close();
    }
    const overflow = await RawH2.open(site.portico.http, false);
    try {
      overflow.write(frame(FRAME.WINDOW_UPDATE, 0, 0, Buffer.from([0x7f, 0xff, 0xff, 0xff])));
      assert.equal(await goawayCode(overflow), FLOW_CONTROL_ERROR);
    } finally {
      overflow.close();
    }
  });

  test('request trailers end the body (the pod gets it whole); trailers without END_STREAM are a stream error', async () => {
    const raw = await RawH2.open(site.portico.http, false);
    try {
      raw.write(
        frame(FRAME.HEADERS, FLAG.END_HEADERS, 1, hpack(request('/with-trailers', 'POST'))),
        frame(FRAME.DATA, 0, 1, Buffer.from('body')),
        frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, 1, hpack([['x-checksum', 'abc']])),
        frame(FRAME.HEADERS, FLAG.END_HEADERS, 3, hpack(request('/bad-trailers', 'POST'))),
        frame(FRAME.HEADERS, FLAG.END_HEADERS, 3, hpack([['x-checksum', 'abc']])),
      );
      await raw.waitFor((f) => f.type === FRAME.DATA && f.streamId === 1 && (f.flags & FLAG.END_STREAM) !== 0);
      const echo = JSON.parse(Buffer.concat(raw.frames.filter((f) => f.type === FRAME.DATA && f.streamId === 1).map((f) => f.payload)).toString());
      assert.equal(echo.bodyLength, 4);
      const rst = await raw.waitFor((f) => f.type === FRAME.RST_STREAM && f.streamId === 3);
      assert.equal(rst?.payload.readUInt32BE(0), PROTOCOL_ERROR);
    } finally {
      raw.close();
    }
  });
});
