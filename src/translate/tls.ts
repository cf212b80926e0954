// kubernetes.io/tls Secrets -> certificates. Parsing is the expensive part of
// translation (X.509 and key parsing, key/cert match), so results are memoized by
// Secret object identity.
import type { CertificateConfig } from '../model/config.ts';
import { TLS_SECRET_TYPE, type Secret } from '../model/k8s.ts';
import { sampleHostFor } from './hosts.ts';
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const { X509Certificate, createPrivateKey } = process.getBuiltinModule('node:crypto');
type X509Certificate = import('node:crypto').X509Certificate;

export type ParsedSecret =
  | { readonly ok: true; readonly certificate: CertificateConfig; covers(host: string): boolean }
  | { readonly ok: false; readonly error: string };

/** Value of a Secret key: stringData wins over data, as when the API server merges them. */
function secretValue(secret: Secret, key: string): string | undefined {
  const plain = secret.stringData?.[key];
  if (plain !== undefined) return plain;
  const encoded = secret.data?.[key];
  return encoded === undefined ? undefined : Buffer.from(encoded, 'base64').toString('utf8');
}

function firstLine(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.split('\n')[0]!;
}

export function parseTlsSecret(secret: Secret): ParsedSecret {
  const name = `Secret ${secret.metadata.namespace ?? 'default'}/${secret.metadata.name}`;
  if (secret.type !== TLS_SECRET_TYPE) {
    return { ok: false, error: `${name} has type ${JSON.stringify(secret.type ?? 'Opaque')}, expected ${JSON.stringify(TLS_SECRET_TYPE)}` };
  }
  const certPem = secretValue(secret, 'tls.crt');
  const keyPem = secretValue(secret, 'tls.key');
  if (!certPem) return { ok: false, error: `${name} has no tls.crt` };
  if (!keyPem) return { ok: false, error: `${name} has no tls.key` };
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(certPem);
  } catch (err) {
    return { ok: false, error: `${name}: tls.crt is not a PEM certificate (${firstLine(err)})` };
  }
  let key;
  try {
    key = createPrivateKey(keyPem);
  } catch (err) {
    return { ok: false, error: `${name}: tls.key is not a PEM private key (${firstLine(err)})` };
  }
  let matches = false;
  try {
    matches = x509.checkPrivateKey(key);
  } catch {
    matches = false;
  }
  if (!matches) return { ok: false, error: `${name}: tls.key does not match the certificate in tls.crt` };

  // A parsed certificate holds about 5 KB of OpenSSL memory (47 MB at 10,000 Secrets):
  // it is kept only until the translation that parsed it is over, for the hosts that
  // name it, and parsed again if a later change asks about another host.
  let held: X509Certificate | undefined = x509;
  const letGo = () => (held = undefined);
  queueMicrotask(letGo);
  const coverage = new Map<string, boolean>();
  return {
    ok: true,
    certificate: { secret: `${secret.metadata.namespace ?? 'default'}/${secret.metadata.name}`, cert: certPem, key: keyPem },
    covers(host: string): boolean {
      let yes = coverage.get(host);
      if (yes === undefined) {
        if (held === undefined) {
          held = new X509Certificate(certPem);
          queueMicrotask(letGo);
        }
        yes = held.checkHost(sampleHostFor(host)) !== undefined;
        coverage.set(host, yes);
      }
      return yes;
    },
  };
}

/** A Secret's values as the API server serves them: base64 data, with stringData folded in. */
export function wireData(secret: Secret): Record<string, string> {
  const data: Record<string, string> = { ...secret.data };
  for (const [key, value] of Object.entries(secret.stringData ?? {})) data[key] = Buffer.from(value, 'utf8').toString('base64');
  return data;
}

/** parseTlsSecret and wireData, memoized per Secret object. */
export class SecretParser {
  private readonly cache = new WeakMap<Secret, ParsedSecret>();
  private readonly wire = new WeakMap<Secret, { readonly data: Readonly<Record<string, string>> }>();

  /** Stable per Secret object, so policies parsed from it compare equal. */
  wireView(secret: Secret): { readonly data: Readonly<Record<string, string>> } {
    let view = this.wire.get(secret);
    if (!view) this.wire.set(secret, (view = { data: wireData(secret) }));
    return view;
  }

  parse(secret: Secret): ParsedSecret {
    let parsed = this.cache.get(secret);
    if (!parsed) {
      parsed = parseTlsSecret(secret);
      this.cache.set(secret, parsed);
    }
    return parsed;
  }
}
