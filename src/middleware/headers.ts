// portico.dev/request-headers and portico.dev/response-headers: one "Name: value" per
// line; each sets that header on the request to the pod, or on the response to the
// client, replacing any header of the same name. Blank lines and lines starting with
// "#" are skipped. Framing and hop-by-hop headers (Content-Length, Connection,
// Transfer-Encoding...) cannot be set, nor the X-Forwarded-* headers the proxy owns;
// Host can (the name the pod sees).
//
// An invalid line is reported and skipped; the other lines apply.
import type { Handler } from '../proxy/context.ts';
import { annotation, reportInvalid } from './annotations.ts';
import { withHeaders } from './header-list.ts';
import type { Middleware, PolicyDefinition, PolicyParseInput } from './types.ts';

export const REQUEST_HEADERS = 'portico.dev/request-headers';
export const RESPONSE_HEADERS = 'portico.dev/response-headers';

export interface HeadersConfig {
  readonly request?: readonly (readonly [string, string])[];
  readonly response?: readonly (readonly [string, string])[];
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// Field values: visible characters, spaces and tabs; no CR, LF, NUL or other controls,
// and nothing above U+00FF (heads are written as latin1). The proxy relies on this:
// these headers are not checked again per request.
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'content-length'];
const FORBIDDEN_REQUEST = new Set([...HOP_BY_HOP, 'x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host', 'x-forwarded-port', 'expect']);
const FORBIDDEN_RESPONSE = new Set(HOP_BY_HOP);

function parseLines(input: PolicyParseInput, name: string, forbidden: ReadonlySet<string>): [string, string][] | undefined {
  const text = annotation(input, name);
  if (text === undefined) return undefined;
  const out: [string, string][] = [];
  for (const rawLine of text.split(/\r?\n/)) {
    const line = rawLine.trim();
    if (line === '' || line.startsWith('#')) continue;
    const colon = line.indexOf(':');
    const header = colon === -1 ? '' : line.slice(0, colon).trim();
    const value = colon === -1 ? '' : line.slice(colon + 1).trim();
    let problem: string | undefined;
    if (colon === -1 || !TOKEN.test(header)) problem = 'a line "Name: value" with a valid header name';
    else if (!FIELD_VALUE.test(value)) problem = 'a header value without control characters or characters beyond Latin-1 (U+00FF)';
    else if (forbidden.has(header.toLowerCase())) problem = `a header other than ${header}, which the proxy manages`;
    if (problem !== undefined) {
      reportInvalid(input, name, line, problem, 'this line is skipped', 'warning');
      continue;
    }
    // A name given twice: the last line wins.
    const lower = header.toLowerCase();
    const at = out.findIndex((e) => e[0].toLowerCase() === lower);
    if (at !== -1) out.splice(at, 1);
    out.push([header, value]);
  }
  return out.length > 0 ? out : undefined;
}

export const headersPolicy: PolicyDefinition<HeadersConfig> = {
  name: 'headers',
  annotations: [REQUEST_HEADERS, RESPONSE_HEADERS],
  order: 70,
  parse(input) {
    const request = parseLines(input, REQUEST_HEADERS, FORBIDDEN_REQUEST);
    const response = parseLines(input, RESPONSE_HEADERS, FORBIDDEN_RESPONSE);
    if (request === undefined && response === undefined) return undefined;
    const config: { request?: [string, string][]; response?: [string, string][] } = {};
    if (request) config.request = request;
    if (response) config.response = response;
    return config;
  },
  create(config): Middleware {
    const request = config.request;
    const response = config.response;
    return (next: Handler): Handler => (ctx) => {
      if (request !== undefined) ctx.requestHeaders = withHeaders(ctx.requestHeaders, request);
      if (response !== undefined) ctx.responseHeaders = withHeaders(ctx.responseHeaders, response);
      next(ctx);
    };
  },
};
