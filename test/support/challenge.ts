// Solving an under-attack challenge outside a browser, as the page's script does.
import { createHash } from 'node:crypto';
import { hasLeadingZeroBits } from '../../src/challenge/tokens.ts';

/** "<nonce>:<counter>" such that its SHA-256 starts with `bits` zero bits. */
export function solve(nonce: string, bits: number): string {
  for (let i = 0; ; i++) {
    const value = `${nonce}:${i}`;
    if (hasLeadingZeroBits(createHash('sha256').update(value).digest(), bits)) return value;
  }
}

/** The nonce and difficulty a challenge page carries. */
export function pageParams(html: string): { nonce: string; bits: number } {
  const m = /<script id="portico-challenge" type="application\/json">([^<]*)<\/script>/.exec(html);
  if (m === null) throw new Error('not a challenge page');
  return JSON.parse(m[1]!) as { nonce: string; bits: number };
}
