// kubernetes.io/tls Secrets -> certificates. Parsing is the expensive part of
// translation (X.509 and key parsing, key/cert match), so results are memoized by
// Secret object identity, and may be checked ahead in child processes (KnownChecks).
import { checkPems, isPlainHost, nameCovers, type PemCheck } from '../tls/pem-check.ts';
import type { CertificateConfig } from '../model/config.ts';
import { TLS_SECRET_TYPE, type Secret } from '../model/k8s.ts';
import { sampleHostFor } from './hosts.ts';
import { flatString, internString } from '../util/flat-string.ts';
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const { X509Certificate } = process.getBuiltinModule('node:crypto');

export type ParsedSecret =
  | { readonly ok: true; readonly certificate: CertificateConfig; covers(host: string): boolean }
  | { readonly ok: false; readonly error: string };

/** Value of a Secret key: stringData wins over data, as when the API server merges them. */
export function secretValue(secret: Secret, key: string): string | undefined {
  const plain = secret.stringData?.[key];
  if (plain !== undefined) return plain;
  const encoded = secret.data?.[key];
  return encoded === undefined ? undefined : Buffer.from(encoded, 'base64').toString('utf8');
}

/** The check of a Secret's PEM made ahead of translation (./secret-checks.ts), if one was. */
export type KnownChecks = (secret: Secret) => PemCheck | undefined;

export function parseTlsSecret(secret: Secret, known?: KnownChecks): ParsedSecret {
  const name = `Secret ${secret.metadata.namespace ?? 'default'}/${secret.metadata.name}`;
  if (secret.type !== TLS_SECRET_TYPE) {
    return { ok: false, error: `${name} has type ${JSON.stringify(secret.type ?? 'Opaque')}, expected ${JSON.stringify(TLS_SECRET_TYPE)}` };
  }
  const certPem = secretValue(secret, 'tls.crt');
  const keyPem = secretValue(secret, 'tls.key');
  if (!certPem) return { ok: false, error: `${name} has no tls.crt` };
  if (!keyPem) return { ok: false, error: `${name} has no tls.key` };
  const check = known?.(secret) ?? checkPems(certPem, keyPem);
  if (!check.ok) return { ok: false, error: `${name}: ${check.error}` };
  return new CheckedCertificate({ secret: flatString(`${secret.metadata.namespace ?? 'default'}/${secret.metadata.name}`), cert: certPem, key: keyPem }, check.names);
}

/**
 * A TLS Secret that passed the checks. A class, not an object with a `covers` closure:
 * at 10,000 Secrets the closures and their scopes held about 1 MB.
 */
class CheckedCertificate {
  readonly ok = true;
  readonly certificate: CertificateConfig;
  /** The certificate's DNS names when all are plain (PemCheck.names), joined by spaces (see nameCovers), else undefined. */
  private readonly names: string | undefined;
  /** Hosts asked of OpenSSL (a parse of 30-50 µs each), remembered. */
  private askedOpenSsl: Map<string, boolean> | undefined = undefined;

  constructor(certificate: CertificateConfig, names: readonly string[] | undefined) {
    this.certificate = certificate;
    // Interned: Secrets copied into many namespaces (a wildcard certificate) have the same names.
    this.names = names === undefined ? undefined : internString(names.join(' '));
  }

  covers(host: string): boolean {
    const sample = sampleHostFor(host);
    // Plain names are matched here (cheap, not memoized); others as OpenSSL does.
    if (this.names !== undefined && isPlainHost(sample)) return nameCovers(this.names, sample);
    let yes = this.askedOpenSsl?.get(host);
    if (yes === undefined) {
      yes = new X509Certificate(this.certificate.cert).checkHost(sample) !== undefined;
      (this.askedOpenSsl ??= new Map()).set(host, yes);
    }
    return yes;
  }
}

/** A Secret's values as the API server serves them: base64 data, with stringData folded in. */
export function wireData(secret: Secret): Record<string, string> {
  const data: Record<string, string> = { ...secret.data };
  for (const [key, value] of Object.entries(secret.stringData ?? {})) data[key] = Buffer.from(value, 'utf8').toString('base64');
  return data;
}

/** parseTlsSecret and wireData, memoized per Secret object. */
export class SecretParser {
  private readonly known: KnownChecks | undefined;
  constructor(known?: KnownChecks) {
    this.known = known;
  }
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
      parsed = parseTlsSecret(secret, this.known);
      this.cache.set(secret, parsed);
    }
    return parsed;
  }
}
