// Host names as the Ingress API defines them: an RFC 1123 subdomain, optionally
// with a single-label wildcard as the whole first label ("*.example.com"), never
// an IP address. The API server enforces this in cluster mode; standalone
// manifests are not validated by anyone else, so translation checks it again.
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const { isIP } = process.getBuiltinModule('node:net');

export type HostResult = { readonly ok: true; readonly host: string } | { readonly ok: false; readonly error: string };

const LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const MAX_HOST_LENGTH = 253;

/** Cheap pre-check so that ordinary names skip net.isIP's large IPv6 regular expression. */
function looksLikeIP(host: string): boolean {
  return host.includes(':') || /^[0-9.]+$/.test(host);
}

/** Lowercases and validates an Ingress host; "" (no host) is valid and means "any host". */
export function normalizeHost(raw: string | undefined): HostResult {
  if (raw === undefined || raw === '') return { ok: true, host: '' };
  const host = raw.toLowerCase();
  const quoted = JSON.stringify(raw);
  if (looksLikeIP(host) && (isIP(host) || isIP(host.replace(/^\[|\]$/g, '')))) {
    return { ok: false, error: `${quoted} is an IP address; Ingress hosts must be DNS names` };
  }
  if (host.length > MAX_HOST_LENGTH) {
    return { ok: false, error: `${quoted} is longer than ${MAX_HOST_LENGTH} characters` };
  }
  const labels = host.split('.');
  for (let i = 0; i < labels.length; i++) {
    const label = labels[i]!;
    if (label === '*') {
      if (i !== 0 || labels.length === 1) {
        return { ok: false, error: `${quoted}: a wildcard must be the whole first label of a longer name, as in "*.example.com"` };
      }
      continue;
    }
    if (label.includes('*')) {
      return { ok: false, error: `${quoted}: a wildcard must be the whole first label of a longer name, as in "*.example.com"` };
    }
    if (label === '') return { ok: false, error: `${quoted} has an empty label` };
    if (!LABEL.test(label)) {
      return {
        ok: false,
        error: `${quoted} is not a valid DNS name: labels are letters, digits and '-', and start and end with a letter or digit`,
      };
    }
  }
  return { ok: true, host };
}

export function isWildcard(host: string): boolean {
  return host.startsWith('*.');
}

/** The wildcard that would cover `host` ("a.b.com" -> "*.b.com"), or undefined for a host of one label. */
export function wildcardParent(host: string): string | undefined {
  const dot = host.indexOf('.');
  return dot > 0 && !isWildcard(host) ? '*' + host.slice(dot) : undefined;
}

/**
 * A concrete name to test certificate coverage with: a wildcard host is covered
 * when a certificate matches any single label under it.
 */
export function sampleHostFor(host: string): string {
  return isWildcard(host) ? 'portico-sample' + host.slice(1) : host;
}
