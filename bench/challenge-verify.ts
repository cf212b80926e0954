// What the under-attack check costs the server per request (portico.dev/under-attack):
// a valid clearance, a forged one, and the solutions a flood would send (wrong
// counters, forged nonces), each checked as src/middleware/under-attack.ts does.
//   node bench/challenge-verify.ts [iterations]
import { checkClearance, checkSolution, issueClearance, issueNonce } from '../src/challenge/tokens.ts';

const n = Number(process.argv[2] ?? 200_000);
const now = Math.floor(Date.now() / 1000);
const clearance = issueClearance('shop.example.com', now + 3600);
const forgedClearance = `${now + 3600}.AAAAAAAAAAAAAAAAAAAAAA`;
const nonce = issueNonce('shop.example.com', 17, now, 300);
const forgedNonce = nonce.slice(0, -4) + 'AAAA';

function measure(name: string, check: (i: number) => unknown): void {
  for (let i = 0; i < 10_000; i++) check(i);
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) check(i);
  const ns = Number(process.hrtime.bigint() - t0) / n;
  console.log(`${name.padEnd(44)} ${(ns / 1000).toFixed(2)} µs`);
}

measure('valid clearance', () => checkClearance(clearance, 'shop.example.com', now));
measure('forged clearance', () => checkClearance(forgedClearance, 'shop.example.com', now));
measure('wrong counter (HMAC + SHA-256)', (i) => checkSolution(`${nonce}:${i}`, 'shop.example.com', 17, now));
measure('forged nonce (HMAC, no SHA-256)', (i) => checkSolution(`${forgedNonce}:${i}`, 'shop.example.com', 17, now));
measure('garbage', () => checkSolution('x'.repeat(100), 'shop.example.com', 17, now));
