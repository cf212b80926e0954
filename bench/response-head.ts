// What reading a pod's response head costs portico's HTTP/1.1 client, in CPU nanoseconds
// per head: through llhttp (the header strings made in C++ and handed over in a callback),
// against src/http1/response-head.ts (the plain head read in JavaScript, its lines copied
// out as bytes). The heads are what nginx and node:http send for a small body.
//
//   node bench/response-head.ts [heads per round]
import { fieldPairs, plainFields, readPlainHead } from '../src/http1/response-head.ts';
import { HTTPParser, kOnHeadersComplete, LENIENT_NONE, RESPONSE } from '../src/http1/parser.ts';

const HEADS: Record<string, string> = {
  nginx: 'HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Sun, 29 Nov 2026 21:28:19 GMT\r\nContent-Type: text/plain\r\nContent-Length: 30\r\nConnection: keep-alive\r\n\r\n',
  'node:http': 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Pod: hello-18082\r\nContent-Length: 560\r\nDate: Sun, 29 Nov 2026 22:41:28 GMT\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\n\r\n',
};
const N = Number(process.argv[2] ?? 1_000_000);
const ROUNDS = 5;

let sink = 0;

function viaLlhttp(head: Buffer): () => void {
  const parser = new HTTPParser();
  parser.initialize(RESPONSE, {}, 0, LENIENT_NONE);
  parser[kOnHeadersComplete] = (_a: number, _b: number, headers: string[] | undefined) => {
    sink += headers!.length;
    return 1; // no body: the next execute starts a new message
  };
  return () => {
    parser.execute(head);
  };
}

function viaReader(head: Buffer): () => void {
  return () => {
    if (!readPlainHead(head, head.length)) throw new Error('not plain');
    sink += plainFields(head).length;
  };
}

function nsPerHead(run: () => void): number {
  for (let i = 0; i < N / 10; i++) run(); // warm-up
  const before = process.cpuUsage();
  for (let i = 0; i < N; i++) run();
  const used = process.cpuUsage(before);
  return ((used.user + used.system) * 1000) / N;
}

for (const [name, text] of Object.entries(HEADS)) {
  const head = Buffer.from(text, 'latin1');
  if (!readPlainHead(head, head.length)) throw new Error(`${name}: not plain`);
  const pairs = fieldPairs(plainFields(head)).length / 2;
  const llhttp: number[] = [];
  const reader: number[] = [];
  // Alternating rounds, so that a slower spell of the machine falls on both.
  for (let round = 0; round < ROUNDS; round++) {
    llhttp.push(nsPerHead(viaLlhttp(head)));
    reader.push(nsPerHead(viaReader(head)));
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const fmt = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(', ');
  console.log(`${name} head (${head.length} bytes, ${pairs} fields passed on): llhttp ${median(llhttp).toFixed(0)} ns (${fmt(llhttp)}), plain reader ${median(reader).toFixed(0)} ns (${fmt(reader)}), ${(median(llhttp) / median(reader)).toFixed(2)}x`);
}
if (sink === 0) console.log('');
