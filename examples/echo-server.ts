// An HTTP echo backend in the spirit of the Kubernetes ingress conformance
// "echoserver": every request is answered 200 with JSON describing what arrived,
// so you can see which Service and which instance ("pod") a route reached and
// what the proxy changed on the way. WebSocket upgrades are accepted and every
// message is echoed back.
//
// Used by `npm start` (examples/start.ts), by the end-to-end tests, and on its own:
//   node examples/echo-server.ts --name hello --port 18081
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { WebSocketServer } from 'ws';

export interface EchoServerOptions {
  /** Reported as `service`: the Service this instance stands for. */
  name: string;
  namespace?: string;
  /** 0 (default): any free port. */
  port?: number;
  /** Default 127.0.0.1: examples and tests stay on loopback. */
  host?: string;
  /** Called with every JSON reply before it is sent (tests use it to see mirrored requests). */
  onRequest?: (reply: EchoReply) => void;
}

export interface EchoServer {
  port: number;
  close(): Promise<void>;
}

/** What the echo server answers, as JSON. */
export interface EchoReply {
  service: string;
  /** Identifies this instance: "<name>-<port>", like a pod name. */
  pod: string;
  namespace: string;
  method: string;
  /** Raw request path, without the query string. */
  path: string;
  /** Raw query string, without the "?" ("" when none). */
  query: string;
  /** The Host header as received. */
  host: string | undefined;
  headers: http.IncomingHttpHeaders;
  bodyLength: number;
  bodySha256: string;
}

// `?size=N` asks for an N-byte body instead of JSON (to test large responses). Capped
// so a stray request cannot make the example allocate without bound.
const MAX_SIZE = 64 * 1024 * 1024;
// As upstream's echo-basic: `?delay=1s` (or 500ms) holds the answer back, to test
// timeouts; `X-Echo-Set-Header: Name:value,Other:value` adds response headers.
const MAX_DELAY_MS = 60_000;

function delayMs(query: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s)$/.exec(new URLSearchParams(query).get('delay') ?? '');
  if (!m) return 0;
  return Math.min(MAX_DELAY_MS, Number(m[1]) * (m[2] === 's' ? 1000 : 1));
}

function echoSetHeaders(value: string | string[] | undefined): [string, string][] {
  if (value === undefined) return [];
  const out: [string, string][] = [];
  for (const item of (Array.isArray(value) ? value.join(',') : value).split(',')) {
    const colon = item.indexOf(':');
    if (colon > 0) out.push([item.slice(0, colon).trim(), item.slice(colon + 1).trim()]);
  }
  return out;
}

export async function startEchoServer(options: EchoServerOptions): Promise<EchoServer> {
  const namespace = options.namespace ?? 'default';
  const host = options.host ?? '127.0.0.1';
  let pod = `${options.name}-${options.port ?? 0}`;

  const server = http.createServer((req, res) => {
    const hash = createHash('sha256');
    let bodyLength = 0;
    req.on('data', (chunk: Buffer) => {
      bodyLength += chunk.length;
      hash.update(chunk);
    });
    req.on('end', () => {
      const url = req.url ?? '/';
      const q = url.indexOf('?');
      const query = q === -1 ? '' : url.slice(q + 1);
      const common = { 'server': 'portico-echo', 'x-pod': pod };

      const size = Number(new URLSearchParams(query).get('size'));
      if (Number.isInteger(size) && size > 0 && size <= MAX_SIZE) {
        res.writeHead(200, { ...common, 'content-type': 'application/octet-stream', 'content-length': size });
        res.end(Buffer.alloc(size, 'x'));
        return;
      }

      const reply: EchoReply = {
        service: options.name,
        pod,
        namespace,
        method: req.method ?? 'GET',
        path: q === -1 ? url : url.slice(0, q),
        query,
        host: req.headers.host,
        headers: req.headers,
        bodyLength,
        bodySha256: hash.digest('hex'),
      };
      options.onRequest?.(reply);
      const body = JSON.stringify(reply, null, 2) + '\n';
      const answer = () => {
        if (res.destroyed) return;
        for (const [name, value] of echoSetHeaders(req.headers['x-echo-set-header'])) res.appendHeader(name, value);
        res.writeHead(200, { ...common, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
        res.end(body);
      };
      const delay = delayMs(query);
      if (delay > 0) setTimeout(answer, delay).unref();
      else answer();
    });
    req.on('error', () => res.destroy());
  });

  // WebSocket: echo each message back, prefixed with who answered.
  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, socket, head) => {
    wss.handleUpgrade(req, socket, head, (ws) => {
      ws.on('message', (data, isBinary) => {
        if (isBinary) ws.send(data, { binary: true });
        else ws.send(`${pod}: ${data.toString()}`);
      });
      ws.on('error', () => ws.terminate());
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  pod = `${options.name}-${port}`;

  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const ws of wss.clients) ws.terminate();
        wss.close();
        server.close(() => resolve());
        // Keep-alive connections (from a proxy's pool) would otherwise hold close() open.
        server.closeAllConnections();
      }),
  };
}

async function cli(): Promise<void> {
  const { values } = parseArgs({
    options: {
      name: { type: 'string', default: 'echo' },
      namespace: { type: 'string', default: 'default' },
      port: { type: 'string', default: '0' },
      host: { type: 'string', default: '127.0.0.1' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write('Usage: node examples/echo-server.ts [--name NAME] [--namespace NS] [--port N] [--host ADDR]\n');
    return;
  }
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    process.stderr.write(`echo-server: invalid --port ${JSON.stringify(values.port)}\n`);
    process.exit(2);
  }
  const echo = await startEchoServer({ name: values.name, namespace: values.namespace, port, host: values.host });
  process.stdout.write(`echo-server ${values.name} listening on http://${values.host}:${echo.port}\n`);
  const stop = () => void echo.close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

if (import.meta.main) await cli();
