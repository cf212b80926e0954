// The HTTP/2 engine's codec: HPACK against RFC 7541's own examples (Appendix C), Huffman
// both ways, frames cut from bytes however they arrive, and request heads RFC 9113
// calls malformed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FrameReader, writeFrameHeader, type FrameSink } from '../../src/http2/wire/frames.ts';
import { HeaderBlock, HpackDecoder, HpackError } from '../../src/http2/wire/hpack.ts';
import { huffmanDecode, huffmanEncode } from '../../src/http2/wire/huffman.ts';
import { contentLength, malformedRequest, malformedTrailers } from '../../src/http2/wire/request-fields.ts';

const hex = (s: string) => Buffer.from(s.replace(/\s+/g, ''), 'hex');

function decodeAll(decoder: HpackDecoder, block: Buffer): string[] {
  const out: string[] = [];
  decoder.decode(block, 0, block.length, out, 1 << 20);
  return out;
}

const REQUESTS: [string, string[], number][] = [
  ['', [':method', 'GET', ':scheme', 'http', ':path', '/', ':authority', 'www.example.com'], 57],
  ['', [':method', 'GET', ':scheme', 'http', ':path', '/', ':authority', 'www.example.com', 'cache-control', 'no-cache'], 110],
  ['', [':method', 'GET', ':scheme', 'https', ':path', '/index.html', ':authority', 'www.example.com', 'custom-key', 'custom-value'], 164],
];

test('RFC 7541 C.3: requests without Huffman, the dynamic table carried from one to the next', () => {
  const blocks = ['828684410f7777772e6578616d706c652e636f6d', '828684be58086e6f2d6361636865', '828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565'];
  const decoder = new HpackDecoder();
  blocks.forEach((b, i) => {
    assert.deepEqual(decodeAll(decoder, hex(b)), REQUESTS[i]![1]);
    assert.equal(decoder.tableSize, REQUESTS[i]![2]);
  });
});

test('RFC 7541 C.4: the same requests with Huffman', () => {
  const blocks = ['828684418cf1e3c2e5f23a6ba0ab90f4ff', '828684be5886a8eb10649cbf', '828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf'];
  const decoder = new HpackDecoder();
  blocks.forEach((b, i) => {
    assert.deepEqual(decodeAll(decoder, hex(b)), REQUESTS[i]![1]);
    assert.equal(decoder.tableSize, REQUESTS[i]![2]);
  });
});

const RESPONSES: [string[], number][] = [
  [[':status', '302', 'cache-control', 'private', 'date', 'Mon, 21 Oct 2013 20:13:21 GMT', 'location', 'https://www.example.com'], 222],
  [[':status', '307', 'cache-control', 'private', 'date', 'Mon, 21 Oct 2013 20:13:21 GMT', 'location', 'https://www.example.com'], 222],
  [[':status', '200', 'cache-control', 'private', 'date', 'Mon, 21 Oct 2013 20:13:22 GMT', 'location', 'https://www.example.com', 'content-encoding', 'gzip', 'set-cookie', 'foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1'], 215],
];

test('RFC 7541 C.5 and C.6: responses in a 256-byte table, entries evicted oldest first, plain and Huffman', () => {
  const plain = [
    '4803333032580770726976617465611d4d6f6e2c203231204f637420323031332032303a31333a323120474d546e1768747470733a2f2f7777772e6578616d706c652e636f6d',
    '4803333037c1c0bf',
    '88c1611d4d6f6e2c203231204f637420323031332032303a31333a323220474d54c05a04677a69707738666f6f3d4153444a4b48514b425a584f5157454f50495541585157454f49553b206d61782d6167653d333630303b2076657273696f6e3d31',
  ];
  const huffman = [
    '488264025885aec3771a4b6196d07abe941054d444a8200595040b8166e082a62d1bff6e919d29ad171863c78f0b97c8e9ae82ae43d3',
    '4883640effc1c0bf',
    '88c16196d07abe941054d444a8200595040b8166e084a62d1bffc05a839bd9ab77ad94e7821dd7f2e6c7b335dfdfcd5b3960d5af27087f3672c1ab270fb5291f9587316065c003ed4ee5b1063d5007',
  ];
  for (const blocks of [plain, huffman]) {
    const decoder = new HpackDecoder(256);
    blocks.forEach((b, i) => {
      assert.deepEqual(decodeAll(decoder, hex(b)), RESPONSES[i]![0]);
      assert.equal(decoder.tableSize, RESPONSES[i]![1]);
    });
  }
});

test('HPACK errors: index 0 or past the table, a table size update over what we allow or after a field, truncated input, bad Huffman padding', () => {
  const bad = [
    '80', // indexed 0
    'ff00', // index 127 + 0: nothing there
    '3fe21f', // size update to 4096 + ... beyond 4096
    '8220', // size update after a field
    '410f7777', // string longer than the block
    '418cf1e3c2e5f23a6ba0ab90f4', // Huffman string cut short (length says 12)
    '4181fe', // one Huffman byte ending in a 0 bit: padding must be 1s
    '4182ffff', // 16 bits of 1s: padding longer than 7 bits (or EOS)
    '7fffffffffff0f', // an integer too large
  ];
  for (const b of bad) assert.throws(() => decodeAll(new HpackDecoder(), hex(b)), HpackError, b);
  // A size update within the limit is fine, and shrinks the table.
  const decoder = new HpackDecoder();
  decodeAll(decoder, hex('828684410f7777772e6578616d706c652e636f6d'));
  assert.equal(decoder.tableSize, 57);
  decodeAll(decoder, hex('20'));
  assert.equal(decoder.tableSize, 0);
});

test('a header list over the limit is decoded (the table stays in step) but not kept, and its size is reported', () => {
  const decoder = new HpackDecoder();
  const out: string[] = [];
  const block = hex('828684410f7777772e6578616d706c652e636f6d');
  const size = decoder.decode(block, 0, block.length, out, 100);
  assert.ok(size > 100);
  assert.deepEqual(out, [':method', 'GET', ':scheme', 'http']);
  assert.equal(decoder.tableSize, 57);
});

test('Huffman: every byte value round-trips; the RFC example encodes as the RFC says', () => {
  const all = Array.from({ length: 256 }, (_, i) => String.fromCharCode(i)).join('');
  for (const text of [all, 'www.example.com', 'no-cache', '', 'a', '/some/path?q=1&r=%20']) {
    const code = huffmanEncode(text);
    assert.equal(huffmanDecode(code, 0, code.length), text);
  }
  assert.equal(huffmanEncode('www.example.com').toString('hex'), 'f1e3c2e5f23a6ba0ab90f4ff');
});

test('HeaderBlock: what the encoder writes, the decoder reads back (static names, literal names, statuses)', () => {
  for (const status of [200, 204, 404, 500, 302, 103, 418]) {
    const block = new HeaderBlock().status(status).add('content-type', 'text/plain').add('x-custom', 'v'.repeat(300)).add('set-cookie', 'a=1').add('set-cookie', 'b=2');
    const buf = Buffer.alloc(block.length);
    assert.equal(block.writeTo(buf, 0), block.length);
    assert.deepEqual(decodeAll(new HpackDecoder(), buf), [':status', String(status), 'content-type', 'text/plain', 'x-custom', 'v'.repeat(300), 'set-cookie', 'a=1', 'set-cookie', 'b=2']);
  }
});

function frameBytes(type: number, flags: number, id: number, payload: Buffer): Buffer {
  const b = Buffer.alloc(9 + payload.length);
  writeFrameHeader(b, 0, payload.length, type, flags, id);
  payload.copy(b, 9);
  return b;
}

class Collect implements FrameSink {
  frames: [number, number, number, string][] = [];
  tooLarge: number[] = [];
  frame(type: number, flags: number, id: number, buf: Buffer, start: number, end: number): void {
    this.frames.push([type, flags, id, buf.subarray(start, end).toString('hex')]);
  }
  frameTooLarge(length: number): void {
    this.tooLarge.push(length);
  }
}

test('FrameReader: the same frames whether bytes come whole, one at a time or in odd pieces; the reserved bit is ignored', () => {
  const frames = [frameBytes(4, 0, 0, Buffer.alloc(0)), frameBytes(1, 5, 1, hex('828684')), frameBytes(0, 1, 1, Buffer.alloc(3000, 7)), frameBytes(8, 0, 0x7fffffff, hex('00010000'))];
  frames[3]![5]! |= 0x80; // the reserved bit of the stream id
  const bytes = Buffer.concat(frames);
  const expected = new Collect();
  new FrameReader().push(bytes, expected);
  assert.equal(expected.frames.length, 4);
  assert.equal(expected.frames[3]![2], 0x7fffffff);
  for (const step of [1, 2, 7, 9, 10, 1000]) {
    const got = new Collect();
    const reader = new FrameReader();
    for (let at = 0; at < bytes.length; at += step) reader.push(bytes.subarray(at, at + step), got);
    assert.deepEqual(got.frames, expected.frames, `pieces of ${step}`);
  }
});

test('FrameReader: a frame longer than SETTINGS_MAX_FRAME_SIZE stops the reader', () => {
  const got = new Collect();
  const reader = new FrameReader();
  reader.push(Buffer.concat([frameBytes(0, 0, 1, Buffer.alloc(16_385)), frameBytes(4, 0, 0, Buffer.alloc(0))]), got);
  assert.deepEqual(got.tooLarge, [16_385]);
  assert.equal(got.frames.length, 0);
  reader.push(frameBytes(4, 0, 0, Buffer.alloc(0)), got);
  assert.equal(got.frames.length, 0, 'nothing more is read');
});

const GET = [':method', 'GET', ':scheme', 'https', ':path', '/', ':authority', 'a.test'];

test('malformed request heads (RFC 9113 8.2-8.3), and the well-formed ones', () => {
  const malformed: [string, string[]][] = [
    ['uppercase name', [...GET, 'X-A', '1']],
    ['connection', [...GET, 'connection', 'close']],
    ['keep-alive', [...GET, 'keep-alive', '1']],
    ['upgrade', [...GET, 'upgrade', 'h2c']],
    ['transfer-encoding', [...GET, 'transfer-encoding', 'chunked']],
    ['te gzip', [...GET, 'te', 'gzip']],
    ['CR in a value', [...GET, 'x-a', 'a\rb']],
    ['NUL in a value', [...GET, 'x-a', 'a\0b']],
    ['leading space', [...GET, 'x-a', ' a']],
    ['trailing tab', [...GET, 'x-a', 'a\t']],
    ['no :method', GET.slice(2)],
    ['no :scheme', [':method', 'GET', ':path', '/']],
    ['no :path', [':method', 'GET', ':scheme', 'https']],
    ['empty :path', [':method', 'GET', ':scheme', 'https', ':path', '']],
    ['duplicate :path', [...GET, ':path', '/x']],
    ['unknown pseudo', [...GET, ':status', '200']],
    ['pseudo after regular', [':method', 'GET', ':scheme', 'https', 'x-a', '1', ':path', '/']],
    ['content-length not a number', [...GET, 'content-length', '1e3']],
    ['two content-lengths that differ', [...GET, 'content-length', '3', 'content-length', '4']],
    ['CONNECT with :path', [':method', 'CONNECT', ':authority', 'a:443', ':path', '/']],
    ['empty name', [...GET, '', 'x']],
  ];
  for (const [what, fields] of malformed) assert.notEqual(malformedRequest(fields), undefined, what);
  assert.equal(malformedRequest([...GET, 'te', 'trailers', 'x-a', 'a b', 'content-length', '5']), undefined);
  assert.equal(contentLength, 5);
  assert.equal(malformedRequest(GET), undefined);
  assert.equal(contentLength, -1);
  assert.equal(malformedRequest([':method', 'CONNECT', ':authority', 'a:443']), undefined, 'CONNECT is well formed (answered 501 later)');
  assert.notEqual(malformedTrailers([':path', '/']), undefined);
  assert.notEqual(malformedTrailers(['X-A', '1']), undefined);
  assert.equal(malformedTrailers(['grpc-status', '0']), undefined);
});
