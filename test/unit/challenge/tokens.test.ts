// The challenge's signed tokens, the cookie reader, the key from a Secret, and the page's
// own SHA-256 (the one browsers run on plain HTTP) against node:crypto.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import { runInNewContext } from 'node:vm';
import { checkClearance, checkSolution, hasLeadingZeroBits, issueClearance, issueNonce, setChallengeKey } from '../../../src/challenge/tokens.ts';
import { cookieValue } from '../../../src/challenge/cookies.ts';
import { keyFromSecret, parseSecretRef } from '../../../src/challenge/secret-key.ts';
import { CHALLENGE_WORKER_SOURCE, challengePage } from '../../../src/challenge/page.ts';
import { solve } from '../../support/challenge.ts';

const NOW = 1_800_000_000;


describe('challenge tokens', () => {
  test('a solved nonce passes for its host; the same nonce fails for another host, expired, or too easy', () => {
    const nonce = issueNonce('shop.test', 8, NOW, 300);
    const solution = solve(nonce, 8);
    assert.equal(checkSolution(solution, 'shop.test', 8, NOW), 'ok');
    assert.equal(checkSolution(solution, 'other.test', 8, NOW), 'forged');
    assert.equal(checkSolution(solution, 'shop.test', 8, NOW + 301), 'expired');
    assert.equal(checkSolution(solution, 'shop.test', 9, NOW), 'too-easy');
  });

  test('a wrong counter, an edited nonce and garbage are refused', () => {
    const nonce = issueNonce('shop.test', 12, NOW, 300);
    const good = solve(nonce, 12);
    const counter = Number(good.slice(good.lastIndexOf(':') + 1));
    assert.equal(checkSolution(`${nonce}:${counter + 1}`, 'shop.test', 12, NOW) === 'ok', hasLeadingZeroBits(createHash('sha256').update(`${nonce}:${counter + 1}`).digest(), 12));
    // Lowering the difficulty inside the nonce breaks its signature.
    const easier = `1${nonce.slice(nonce.indexOf('.'))}`;
    assert.equal(checkSolution(solve(easier, 1), 'shop.test', 1, NOW), 'forged');
    for (const junk of ['', ':', 'x', 'a.b.c.d:1', `${nonce}:`, `${nonce}:-1`, `${nonce}:1e5`, 'x'.repeat(500)]) {
      assert.equal(checkSolution(junk, 'shop.test', 12, NOW) === 'ok', false, junk);
    }
  });

  test('a clearance is valid for its host until it expires; forged ones are not', () => {
    const c = issueClearance('shop.test', NOW + 60);
    assert.equal(checkClearance(c, 'shop.test', NOW), true);
    assert.equal(checkClearance(c, 'other.test', NOW), false);
    assert.equal(checkClearance(c, 'shop.test', NOW + 60), false);
    assert.equal(checkClearance(`${NOW + 99999}${c.slice(c.indexOf('.'))}`, 'shop.test', NOW), false, 'a later expiry with the old signature');
    assert.equal(checkClearance(`${NOW + 60}.AAAAAAAAAAAAAAAAAAAAAA`, 'shop.test', NOW), false);
    assert.equal(checkClearance('garbage', 'shop.test', NOW), false);
  });

  test('a new key invalidates what the old one signed, and short keys are refused', () => {
    setChallengeKey(Buffer.alloc(32, 1));
    const c = issueClearance('shop.test', NOW + 60);
    setChallengeKey(Buffer.alloc(32, 2));
    assert.equal(checkClearance(c, 'shop.test', NOW), false);
    setChallengeKey(Buffer.alloc(32, 1));
    assert.equal(checkClearance(c, 'shop.test', NOW), true);
    assert.throws(() => setChallengeKey(Buffer.alloc(8)), /at least 16 bytes/);
  });

  test('the signatures are HMAC-SHA256 as RFC 2104 defines it (short and long keys)', () => {
    for (const key of [Buffer.alloc(32, 3), Buffer.alloc(100, 4)]) {
      setChallengeKey(key);
      const expected = createHmac('sha256', key).update(`c|shop.test|${NOW}`).digest().subarray(0, 16).toString('base64url');
      assert.equal(issueClearance('shop.test', NOW), `${NOW}.${expected}`);
    }
  });

  test('leading zero bits', () => {
    assert.equal(hasLeadingZeroBits(Uint8Array.of(0, 0x0f, 0xff), 12), true);
    assert.equal(hasLeadingZeroBits(Uint8Array.of(0, 0x1f, 0xff), 12), false);
    assert.equal(hasLeadingZeroBits(Uint8Array.of(0, 0, 0xff), 16), true);
    assert.equal(hasLeadingZeroBits(Uint8Array.of(0x80), 1), false);
  });
});

describe('cookieValue', () => {
  const p = 'portico_clearance=';
  test('finds the cookie among others, in any Cookie header, and not inside another name', () => {
    assert.equal(cookieValue(['Cookie', 'a=1; portico_clearance=abc.def; b=2'], p), 'abc.def');
    assert.equal(cookieValue(['Host', 'x', 'cookie', 'a=1', 'COOKIE', 'portico_clearance=v'], p), 'v');
    assert.equal(cookieValue(['cookie', 'xportico_clearance=no'], p), undefined);
    assert.equal(cookieValue(['cookie', 'xportico_clearance=no; portico_clearance=yes'], p), 'yes');
    assert.equal(cookieValue(['cookie-x', 'portico_clearance=no'], p), undefined);
  });
});

describe('the key from a Secret', () => {
  test('data.key (base64) or stringData.key, at least 16 bytes; else why not', () => {
    assert.deepEqual(keyFromSecret({ data: { key: Buffer.alloc(32, 7).toString('base64') } }), Buffer.alloc(32, 7));
    assert.deepEqual(keyFromSecret({ stringData: { key: 'sixteen bytes!!!' } }), Buffer.from('sixteen bytes!!!'));
    assert.match(keyFromSecret({ data: { other: 'eA==' } }) as string, /no "key" entry/);
    assert.match(keyFromSecret({ data: { key: 'eA==' } }) as string, /has 1 bytes; at least 16/);
  });
  test('references', () => {
    assert.deepEqual(parseSecretRef('edge/challenge'), { namespace: 'edge', name: 'challenge' });
    assert.deepEqual(parseSecretRef('challenge'), { namespace: 'default', name: 'challenge' });
    assert.equal(parseSecretRef('a/b/c'), undefined);
    assert.equal(parseSecretRef('Bad_Name'), undefined);
  });
});

describe('the challenge page', () => {
  test("the page's JavaScript SHA-256 agrees with node:crypto (one and two blocks)", () => {
    const context: Record<string, unknown> = { self: {}, postMessage: () => {} };
    runInNewContext(CHALLENGE_WORKER_SOURCE, context);
    const sha256 = context.sha256 as (s: string) => number[];
    for (const text of ['', 'abc', 'x'.repeat(55), 'x'.repeat(56), `${issueNonce('a-long-host-name.example.com', 16, NOW, 300)}:1234567890`]) {
      const digest = createHash('sha256').update(text).digest();
      assert.deepEqual([...sha256(text)], [digest.readInt32BE(0), digest.readInt32BE(4)], `"${text}"`);
    }
  });

  test('the host is escaped, the parameters cannot close the script, and noscript says what to do', () => {
    const page = challengePage('<b>evil</b>', 'n</script>', 16, false);
    assert.doesNotMatch(page, /<b>evil/);
    assert.doesNotMatch(page, /n<\/script>/);
    assert.match(page, /<noscript>.*Turn JavaScript on/s);
    assert.doesNotMatch(page, /(src|href)=["']?https?:/, 'no external resource');
  });
});
