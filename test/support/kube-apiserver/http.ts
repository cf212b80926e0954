// HTTP front of the test API server: authentication, injected failures, the request
// log, discovery, and REST paths mapped to registry verbs and watches.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { timingSafeEqual } from 'node:crypto';
import { findByPath, type ResourceKind } from './kinds.ts';
import { apiGroupDocument, apiGroupList, apiResourceList, apiVersions, rootPaths, versionInfo } from './discovery.ts';
import { PATCH_TYPES, type PatchType } from './patch.ts';
import { getScale, patchScale, updateScale } from './scale.ts';
import type { ListOptions, Registry } from './registry.ts';
import { parseFieldSelector, parseLabelSelector } from './selectors.ts';
import { ApiError, errors } from './status.ts';
import type { WatchHub } from './watch.ts';

/** One request as the server saw it, for asserting which calls a client made (e.g. RBAC coverage). */
export interface RequestRecord {
  method: string;
  path: string;
  query: Record<string, string>;
  watch: boolean;
  /** The Kubernetes verb: get, list, watch, create, update, patch, delete, deletecollection; "" for non-resource paths. */
  verb: string;
  /** For resource requests: API group ("" for core), plural and scope. */
  group?: string;
  resource?: string;
  namespace?: string;
  name?: string;
  subresource?: string;
  /** HTTP status of the answer (set when the answer starts). */
  status?: number;
}

/** A pending injected failure (failNext). */
export interface InjectedFailure {
  status: number;
  matches?: (record: RequestRecord) => boolean;
}

export interface HttpContext {
  token: string;
  registry: Registry;
  hub: WatchHub;
  requests: RequestRecord[];
  failures: InjectedFailure[];
  /** host:port, for /api's serverAddressByClientCIDRs */
  address: () => string;
  /** API groups whose CRDs are not installed: 404, and absent from discovery. */
  hiddenGroups: ReadonlySet<string>;
}

const MAX_BODY_BYTES = 3 * 1024 * 1024;
const DEFAULT_WATCH_TIMEOUT_S = () => 1800 + Math.floor(Math.random() * 1800);

interface ResourceRoute {
  resource: ResourceKind;
  namespace?: string;
  name?: string;
  subresource?: 'status' | 'scale';
  /** The legacy /watch/ path prefix */
  watchPath: boolean;
}

type Route = { kind: 'document'; body: unknown; text?: boolean } | { kind: 'resource'; route: ResourceRoute };

function routeFor(segments: string[], address: string, hidden: ReadonlySet<string>): Route | undefined {
  const [a, b, c] = segments;
  if (segments.length === 0) return { kind: 'document', body: rootPaths() };
  if (segments.length === 1 && a === 'version') return { kind: 'document', body: versionInfo() };
  if (segments.length === 1 && (a === 'healthz' || a === 'livez' || a === 'readyz')) return { kind: 'document', body: 'ok', text: true };
  let group: string;
  let version: string;
  let rest: string[];
  if (a === 'api') {
    if (segments.length === 1) return { kind: 'document', body: apiVersions(address) };
    if (b !== 'v1') return undefined;
    [group, version, rest] = ['', 'v1', segments.slice(2)];
  } else if (a === 'apis') {
    if (segments.length === 1) return { kind: 'document', body: apiGroupList(hidden) };
    if (hidden.has(b!)) return undefined;
    if (segments.length === 2) {
      const doc = apiGroupDocument(b!);
      return doc ? { kind: 'document', body: doc } : undefined;
    }
    [group, version, rest] = [b!, c!, segments.slice(3)];
  } else return undefined;
  if (rest.length === 0) {
    const doc = apiResourceList(group, version);
    return doc ? { kind: 'document', body: doc } : undefined;
  }
  let watchPath = false;
  if (rest[0] === 'watch') {
    watchPath = true;
    rest = rest.slice(1);
  }
  let namespace: string | undefined;
  if (rest[0] === 'namespaces' && rest.length >= 3 && findByPath(group, version, rest[2]!)?.namespaced) {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  const resource = findByPath(group, version, rest[0] ?? '');
  if (!resource || rest.length > 3) return undefined;
  const [, name, sub] = rest;
  if (sub !== undefined && !(sub === 'status' && resource.statusSubresource) && !(sub === 'scale' && resource.scaleSubresource)) return undefined;
  // A namespaced object is only addressable within its namespace.
  if (resource.namespaced && name !== undefined && namespace === undefined) return undefined;
  return { kind: 'resource', route: { resource, namespace, name, subresource: sub as 'status' | 'scale' | undefined, watchPath } };
}

function send(res: ServerResponse, code: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(code, {
    'content-type': typeof body === 'string' ? 'text/plain; charset=utf-8' : 'application/json',
    'content-length': String(Buffer.byteLength(text)),
    'cache-control': 'no-cache, private',
    ...headers,
  });
  res.end(text);
}

function sendError(res: ServerResponse, err: ApiError): void {
  const retry = err.details?.retryAfterSeconds;
  send(res, err.code, err.toStatus(), retry ? { 'retry-after': String(retry) } : {});
}

function authorized(header: string | undefined, token: string): boolean {
  const m = /^Bearer\s+(.+)$/i.exec(header ?? '');
  if (!m) return false;
  const given = Buffer.from(m[1]!.trim());
  const wanted = Buffer.from(token);
  return given.length === wanted.length && timingSafeEqual(given, wanted);
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new ApiError(413, 'RequestEntityTooLarge', 'Request entity too large: limit is 3145728');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

function parseJson(raw: Buffer): unknown {
  if (raw.length === 0) return undefined;
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch (err) {
    throw errors.badRequest(`couldn't get version/kind; json parse error: ${(err as Error).message}`);
  }
}

function mediaType(req: IncomingMessage): string {
  return (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
}

function verbFor(method: string, route: ResourceRoute, watchParam: boolean): string {
  switch (method) {
    case 'GET':
      if (route.watchPath || watchParam) return 'watch';
      return route.name === undefined ? 'list' : 'get';
    case 'POST': return route.name === undefined ? 'create' : '';
    case 'PUT': return route.name === undefined ? '' : 'update';
    case 'PATCH': return route.name === undefined ? '' : 'patch';
    case 'DELETE': return route.name === undefined ? 'deletecollection' : 'delete';
    default: return '';
  }
}

export function createRequestHandler(ctx: HttpContext): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    handle(ctx, req, res).catch((err: unknown) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      if (err instanceof ApiError) sendError(res, err);
      else sendError(res, new ApiError(500, 'InternalError', `Internal error occurred: ${(err as Error)?.message ?? String(err)}`));
    });
  };
}

async function handle(ctx: HttpContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://kube-apiserver');
  const method = (req.method ?? 'GET').toUpperCase();
  const q = url.searchParams;
  const watchParam = q.get('watch') === 'true' || q.get('watch') === '1';
  const segments = url.pathname.split('/').filter(Boolean);
  const found = routeFor(segments, ctx.address(), ctx.hiddenGroups);

  const record: RequestRecord = { method, path: url.pathname, query: Object.fromEntries(q), watch: false, verb: '' };
  if (found?.kind === 'resource') {
    const { route } = found;
    record.verb = verbFor(method, route, watchParam);
    record.watch = record.verb === 'watch';
    record.group = route.resource.group;
    record.resource = route.resource.plural;
    if (route.namespace !== undefined) record.namespace = route.namespace;
    if (route.name !== undefined) record.name = route.name;
    if (route.subresource) record.subresource = route.subresource;
  } else if (method === 'GET') record.verb = 'get';
  ctx.requests.push(record);
  const writeHead = res.writeHead.bind(res);
  res.writeHead = ((code: number, ...rest: unknown[]) => {
    record.status = code;
    return (writeHead as (...args: unknown[]) => ServerResponse)(code, ...rest);
  }) as typeof res.writeHead;

  if (!authorized(req.headers.authorization, ctx.token)) {
    req.resume();
    return sendError(res, errors.unauthorized());
  }
  const failureIndex = ctx.failures.findIndex((f) => !f.matches || f.matches(record));
  if (failureIndex !== -1) {
    const [failure] = ctx.failures.splice(failureIndex, 1);
    req.resume();
    return sendError(res, errors.generic(failure!.status));
  }
  if (!found) {
    req.resume();
    return sendError(res, errors.noSuchPath());
  }
  if (found.kind === 'document') {
    req.resume();
    if (method !== 'GET' && method !== 'HEAD') return sendError(res, errors.methodNotAllowed());
    return send(res, 200, found.body);
  }

  const { route } = found;
  const { resource, namespace, name, subresource } = route;
  const { registry } = ctx;
  if (q.has('dryRun')) throw errors.badRequest('dryRun is not supported by this test API server');
  const listOptions: ListOptions = {
    labelSelector: q.get('labelSelector'),
    fieldSelector: q.get('fieldSelector'),
    limit: q.get('limit'),
    continue: q.get('continue'),
    resourceVersion: q.get('resourceVersion'),
    resourceVersionMatch: q.get('resourceVersionMatch'),
  };

  if (subresource === 'scale') return handleScale(req, res, registry, route, record.verb);

  switch (record.verb) {
    case 'get':
      req.resume();
      return send(res, 200, registry.get(resource, namespace, name!));
    case 'list':
      req.resume();
      return send(res, 200, registry.list(resource, namespace, listOptions));
    case 'watch': {
      req.resume();
      const labels = parseLabelSelector(listOptions.labelSelector);
      const fields = parseFieldSelector(listOptions.fieldSelector, resource);
      const sendInitialEvents = q.get('sendInitialEvents') === 'true';
      const allowBookmarks = q.get('allowWatchBookmarks') === 'true';
      if (sendInitialEvents && (listOptions.resourceVersionMatch !== 'NotOlderThan' || !allowBookmarks)) {
        throw errors.invalid(resource, '', 'sendInitialEvents', 'Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan and allowWatchBookmarks');
      }
      const timeoutSeconds = q.has('timeoutSeconds') ? Number(q.get('timeoutSeconds')) : DEFAULT_WATCH_TIMEOUT_S();
      if (!Number.isFinite(timeoutSeconds) || timeoutSeconds < 0) throw errors.badRequest(`invalid timeoutSeconds: ${q.get('timeoutSeconds')}`);
      ctx.hub.start(res, {
        resource,
        namespace,
        matches: name === undefined ? (o) => labels(o) && fields(o) : (o) => o.metadata.name === name && labels(o) && fields(o),
        resourceVersion: listOptions.resourceVersion ?? '',
        allowBookmarks,
        sendInitialEvents,
        timeoutMs: timeoutSeconds === 0 ? DEFAULT_WATCH_TIMEOUT_S() * 1000 : timeoutSeconds * 1000,
      });
      return;
    }
    case 'create':
    case 'update': {
      if (resource.namespaced && namespace === undefined) throw errors.methodNotAllowed();
      const type = mediaType(req);
      if (type && type !== 'application/json') throw errors.unsupportedMediaType(type);
      const body = parseJson(await readBody(req));
      const result = record.verb === 'create' ? registry.create(resource, namespace, body) : registry.update(resource, namespace, name!, body, subresource as 'status' | undefined);
      return send(res, result.code, result.object);
    }
    case 'patch': {
      const type = mediaType(req);
      if (!(PATCH_TYPES as readonly string[]).includes(type)) {
        req.resume();
        throw errors.unsupportedMediaType(type);
      }
      const patch = parseJson(await readBody(req));
      if (patch === undefined) throw errors.badRequest('the body of a patch must not be empty');
      const result = registry.patch(resource, namespace, name!, type as PatchType, patch, subresource as 'status' | undefined);
      return send(res, result.code, result.object);
    }
    case 'delete': {
      if (subresource) throw errors.methodNotAllowed();
      const options = parseJson(await readBody(req));
      const result = registry.delete(resource, namespace, name!, options);
      return send(res, result.code, result.object);
    }
    case 'deletecollection':
      req.resume();
      return send(res, 200, registry.deleteCollection(resource, namespace, listOptions));
    default:
      req.resume();
      throw errors.methodNotAllowed();
  }
}

/** get, update and patch of a workload's Scale; nothing else is served on /scale. */
async function handleScale(req: IncomingMessage, res: ServerResponse, registry: Registry, route: ResourceRoute, verb: string): Promise<void> {
  const { resource, namespace, name } = route;
  if (verb === 'get') {
    req.resume();
    return send(res, 200, getScale(registry, resource, namespace, name!));
  }
  if (verb === 'update') {
    const type = mediaType(req);
    if (type && type !== 'application/json') throw errors.unsupportedMediaType(type);
    const result = updateScale(registry, resource, namespace, name!, parseJson(await readBody(req)));
    return send(res, result.code, result.object);
  }
  if (verb === 'patch') {
    const type = mediaType(req);
    if (!(PATCH_TYPES as readonly string[]).includes(type)) {
      req.resume();
      throw errors.unsupportedMediaType(type);
    }
    const patch = parseJson(await readBody(req));
    if (patch === undefined) throw errors.badRequest('the body of a patch must not be empty');
    const result = patchScale(registry, resource, namespace, name!, type as PatchType, patch);
    return send(res, result.code, result.object);
  }
  req.resume();
  throw errors.methodNotAllowed();
}
