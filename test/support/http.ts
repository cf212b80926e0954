// A plain HTTP(S) client for black-box tests: full control over Host, SNI and body,
// one connection per request so nothing lingers after a test.
import http from 'node:http';
import https from 'node:https';

export interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  text: string;
  json<T = Record<string, unknown>>(): T;
}

export interface RequestOptions {
  method?: string;
  host?: string;
  path?: string;
  headers?: Record<string, string | string[]>;
  body?: Buffer | string;
  https?: { servername?: string; ca?: string | string[]; rejectUnauthorized?: boolean };
  timeoutMs?: number;
}

export function send(port: number, o: RequestOptions = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | string[]> = { ...(o.headers ?? {}) };
    if (o.host !== undefined) headers.host = o.host;
    const common = { hostname: '127.0.0.1', port, method: o.method ?? 'GET', path: o.path ?? '/', headers, agent: false as const };
    const req = o.https
      ? https.request({ ...common, servername: o.https.servername, ca: o.https.ca, rejectUnauthorized: o.https.rejectUnauthorized ?? true })
      : http.request(common);
    req.setTimeout(o.timeoutMs ?? 10_000, () => req.destroy(new Error('client timeout')));
    req.on('error', reject);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const body = Buffer.concat(chunks);
        const text = body.toString('utf8');
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, text, json: () => JSON.parse(text) });
      });
    });
    req.end(o.body);
  });
}

export const get = (port: number, host: string, path = '/', extra: Omit<RequestOptions, 'host' | 'path'> = {}) => send(port, { ...extra, host, path });
