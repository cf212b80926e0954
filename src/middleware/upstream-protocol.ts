// portico.dev/upstream-protocol: what the pods speak. http (default), h2c (HTTP/2
// without TLS), https, h2 (HTTP/2 over TLS). For https and h2 the pod's certificate is
// verified: against the CA in portico.dev/upstream-ca-secret (a Secret of the
// Ingress' namespace, key ca.crt), else against the system's CAs; or not at all with
// portico.dev/upstream-insecure-skip-verify: "true".
//
// Invalid values: an unknown protocol is reported and the pods get plain HTTP. CA
// problems fail closed: a missing Secret, a missing or unreadable ca.crt, or an
// invalid skip-verify value are reported and verification stays on (against the
// system's CAs, so a pod with a private certificate gets 502, never an unverified
// connection).
import { PLAIN_HTTP, type Handler, type UpstreamProfile } from '../proxy/context.ts';
import { parseBool } from '../util/units.ts';
import { annotation, reportIgnored, reportInvalid } from './annotations.ts';
import type { Middleware, PolicyDefinition, PolicyParseInput } from './types.ts';
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const { createHash, X509Certificate } = process.getBuiltinModule('node:crypto');

export const UPSTREAM_PROTOCOL = 'portico.dev/upstream-protocol';
export const UPSTREAM_CA_SECRET = 'portico.dev/upstream-ca-secret';
export const UPSTREAM_INSECURE_SKIP_VERIFY = 'portico.dev/upstream-insecure-skip-verify';
export const CA_KEY = 'ca.crt';

type Protocol = UpstreamProfile['protocol'];
const PROTOCOLS: readonly Protocol[] = ['http', 'https', 'h2c', 'h2'];

export interface UpstreamProtocolConfig {
  readonly protocol: Protocol;
  /** Name of the Secret the CA came from (for display). */
  readonly caSecret?: string;
  /** PEM CA bundle. */
  readonly ca?: string;
  readonly insecureSkipVerify?: true;
}

/** The PEM in a Secret's ca.crt; a string saying what is wrong otherwise. */
function readCa(input: PolicyParseInput, secretName: string): { pem: string } | string {
  const namespace = input.ingress.namespace ?? 'default';
  const secret = input.secret?.(secretName);
  if (secret === undefined) return `Secret ${namespace}/${secretName} not found`;
  const encoded = secret.data?.[CA_KEY];
  if (encoded === undefined) return `Secret ${namespace}/${secretName} has no ${CA_KEY}`;
  const pem = Buffer.from(encoded, 'base64').toString('utf8');
  try {
    new X509Certificate(pem);
  } catch {
    return `${CA_KEY} in Secret ${namespace}/${secretName} is not a PEM certificate`;
  }
  return { pem };
}

function parseTls(input: PolicyParseInput, protocol: Protocol): UpstreamProtocolConfig {
  const skipText = annotation(input, UPSTREAM_INSECURE_SKIP_VERIFY);
  const secretName = annotation(input, UPSTREAM_CA_SECRET);
  if (skipText !== undefined) {
    const skip = parseBool(skipText);
    if (skip === undefined) {
      reportInvalid(input, UPSTREAM_INSECURE_SKIP_VERIFY, skipText, 'true or false', 'pod certificates are verified');
    } else if (skip) {
      if (secretName !== undefined) reportIgnored(input, UPSTREAM_CA_SECRET, `not used: ${UPSTREAM_INSECURE_SKIP_VERIFY} turns verification off`);
      return { protocol, insecureSkipVerify: true };
    }
  }
  if (secretName === undefined || secretName === '') return { protocol };
  const ca = readCa(input, secretName);
  if (typeof ca === 'string') {
    input.report({
      severity: 'error',
      reason: 'InvalidAnnotation',
      message: `annotation ${UPSTREAM_CA_SECRET}: ${ca}; pod certificates are verified against the system's CAs`,
    });
    return { protocol, caSecret: secretName };
  }
  return { protocol, caSecret: secretName, ca: ca.pem };
}

/** Pools are shared per profile key: equal protocol, CA and verification share connections. */
export function profileKey(config: UpstreamProtocolConfig): string {
  let key: string = config.protocol;
  if (config.ca !== undefined) key += '|ca:' + createHash('sha256').update(config.ca).digest('hex').slice(0, 16);
  if (config.insecureSkipVerify) key += '|insecure';
  return key;
}

export const upstreamProtocolPolicy: PolicyDefinition<UpstreamProtocolConfig> = {
  name: 'upstream-protocol',
  annotations: [UPSTREAM_PROTOCOL, UPSTREAM_CA_SECRET, UPSTREAM_INSECURE_SKIP_VERIFY],
  order: 90,
  parse(input) {
    const text = annotation(input, UPSTREAM_PROTOCOL);
    const tlsOnly = [UPSTREAM_CA_SECRET, UPSTREAM_INSECURE_SKIP_VERIFY].filter((n) => annotation(input, n) !== undefined);
    if (text === undefined) {
      for (const name of tlsOnly) reportIgnored(input, name, `has no effect without ${UPSTREAM_PROTOCOL}: https or h2`);
      return undefined;
    }
    const protocol = text.toLowerCase() as Protocol;
    if (!PROTOCOLS.includes(protocol)) {
      reportInvalid(input, UPSTREAM_PROTOCOL, text, 'http, https, h2c or h2', 'the pods are sent plain HTTP/1.1');
      return undefined;
    }
    if (protocol === 'https' || protocol === 'h2') return parseTls(input, protocol);
    for (const name of tlsOnly) reportIgnored(input, name, `has no effect with ${UPSTREAM_PROTOCOL}: ${protocol} (no TLS to the pods)`);
    return { protocol };
  },
  keepsState: true,
  create(config, shared): Middleware {
    const key = profileKey(config);
    // One profile object per key, so routes with equal settings hit the same pool cache.
    const profile: UpstreamProfile =
      key === PLAIN_HTTP.key
        ? PLAIN_HTTP
        : shared.get(`upstream-profile|${key}`, () => {
            const p: { key: string; protocol: Protocol; ca?: string; insecureSkipVerify?: boolean } = { key, protocol: config.protocol };
            if (config.ca !== undefined) p.ca = config.ca;
            if (config.insecureSkipVerify) p.insecureSkipVerify = true;
            return Object.freeze(p);
          });
    return (next: Handler): Handler => (ctx) => {
      ctx.upstream = profile;
      next(ctx);
    };
  },
};
