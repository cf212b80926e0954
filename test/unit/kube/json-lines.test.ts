import { test } from 'node:test';
import assert from 'node:assert/strict';
import { JsonLines } from '../../../src/kube/json-lines.ts';

function parseAll(chunks: (string | Buffer)[]): unknown[] {
  const out: unknown[] = [];
  const lines = new JsonLines((v) => out.push(v));
  for (const c of chunks) lines.push(typeof c === 'string' ? Buffer.from(c) : c);
  lines.end();
  return out;
}

test('one document per line, however the lines are cut into chunks', () => {
  const events = [{ type: 'ADDED', object: { metadata: { name: 'a' } } }, { type: 'MODIFIED', object: { metadata: { name: 'b' } } }, { type: 'BOOKMARK', object: {} }];
  const text = events.map((e) => JSON.stringify(e) + '\n').join('');
  assert.deepEqual(parseAll([text]), events);
  // Every cut of the stream into two chunks, and one byte at a time.
  for (let cut = 0; cut <= text.length; cut++) assert.deepEqual(parseAll([text.slice(0, cut), text.slice(cut)]), events, `cut at ${cut}`);
  assert.deepEqual(parseAll([...Buffer.from(text)].map((b) => Buffer.from([b]))), events);
});

test('a multi-byte character cut between chunks, blank lines, and a last line without a newline', () => {
  const bytes = Buffer.from('{"name":"caf\u00e9 \u{1F600}"}\n\n  \n{"n":2}');
  const out = parseAll([...bytes].map((b) => Buffer.from([b])));
  assert.deepEqual(out, [{ name: 'caf\u00e9 \u{1F600}' }, { n: 2 }]);
});

test('a line that is not JSON throws, as JSON.parse does', () => {
  const lines = new JsonLines(() => {});
  assert.throws(() => lines.push(Buffer.from('{"a":\n')), SyntaxError);
});
