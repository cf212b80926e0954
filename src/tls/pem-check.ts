// What translation needs to know of a TLS Secret's PEM: whether OpenSSL takes the
// certificate and the key, whether they match, and the names the certificate is for.
// Pure and synchronous, so the same function runs in translation and in the threads
// that check Secrets ahead of it (./secret-checks.ts); its result is plain data.
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const { X509Certificate, createPrivateKey } = process.getBuiltinModule('node:crypto');
type X509Certificate = import('node:crypto').X509Certificate;

export type PemCheck =
  /** names: the certificate's DNS names, lowercase, when every one is plain (see nameCovers); else undefined (ask OpenSSL). */
  | { readonly ok: true; readonly names: readonly string[] | undefined }
  /** error: what is wrong, without the Secret's name ("tls.key does not match ..."). */
  | { readonly ok: false; readonly error: string };

function firstLine(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.split('\n')[0]!;
}

/** Parses the certificate and the key and checks that they match: about 100 µs, nearly all of it OpenSSL's two parses. */
export function checkPems(certPem: string, keyPem: string): PemCheck {
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(certPem);
  } catch (err) {
    return { ok: false, error: `tls.crt is not a PEM certificate (${firstLine(err)})` };
  }
  let key;
  try {
    key = createPrivateKey(keyPem);
  } catch (err) {
    return { ok: false, error: `tls.key is not a PEM private key (${firstLine(err)})` };
  }
  let matches = false;
  try {
    matches = x509.checkPrivateKey(key);
  } catch {
    matches = false;
  }
  if (!matches) return { ok: false, error: 'tls.key does not match the certificate in tls.crt' };
  return { ok: true, names: plainDnsNames(x509.subjectAltName) };
}

/** Labels of letters, digits and inner hyphens, two or more (OpenSSL takes a wildcard only in such names). */
const PLAIN_NAME = /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)+$/;

/**
 * The DNS names of a subjectAltName ("DNS:a.example, DNS:*.b.example, IP Address:..."),
 * lowercase, when each is plain: such labels, two or more, and at most a whole "*" first
 * label with two labels or more after it. Undefined otherwise (no DNS name, when OpenSSL
 * looks at the subject's CN instead; quoted, partial or short wildcards; IDNA and the
 * like), and checkHost answers. Other kinds of names are not looked at, as by OpenSSL.
 */
export function plainDnsNames(subjectAltName: string | undefined): readonly string[] | undefined {
  if (subjectAltName === undefined) return undefined;
  const names: string[] = [];
  for (const entry of subjectAltName.split(', ')) {
    if (!entry.startsWith('DNS:')) {
      // Node quotes a value with a comma or a quote in it: such a list is not split right here.
      if (entry.includes('"')) return undefined;
      continue;
    }
    const name = entry.slice(4).toLowerCase();
    const rest = name.startsWith('*.') ? name.slice(2) : name;
    if (!PLAIN_NAME.test(rest) || (rest !== name && !rest.includes('.'))) return undefined;
    names.push(name);
  }
  // Not kept as they are: a checked certificate keeps them joined, in one flat string (translate/tls.ts).
  return names.length > 0 ? names : undefined;
}

/** A plain host (see plainDnsNames), for which nameCovers answers as X509Certificate.checkHost does. */
export function isPlainHost(host: string): boolean {
  return PLAIN_NAME.test(host.toLowerCase());
}

/**
 * Whether plain names cover a plain host, as OpenSSL's X509_check_host with Node's
 * defaults: equal ignoring case, or "*.rest" for a host of one more label. `names`: the
 * names joined by spaces (which no plain name has): one string kept per certificate
 * rather than an array and a string per name (0.5 MB at 10,000 certificates).
 */
export function nameCovers(names: string, host: string): boolean {
  const lower = host.toLowerCase();
  const dot = lower.indexOf('.');
  return hasName(names, lower) || (dot > 0 && hasName(names, `*${lower.slice(dot)}`));
}

/** Whether `name` is one of the space-separated `names`. */
function hasName(names: string, name: string): boolean {
  for (let at = names.indexOf(name); at !== -1; at = names.indexOf(name, at + 1)) {
    const end = at + name.length;
    if ((at === 0 || names.charCodeAt(at - 1) === 0x20) && (end === names.length || names.charCodeAt(end) === 0x20)) return true;
  }
  return false;
}
