// Errors as the real API server sends them: a metav1.Status body with the HTTP code.
import { qualifiedKind, qualifiedResource, type ResourceKind } from './kinds.ts';

export interface StatusBody {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, unknown>;
  status: 'Failure';
  message: string;
  reason: string;
  details?: { name?: string; group?: string; kind?: string; causes?: { reason?: string; message: string; field?: string }[]; retryAfterSeconds?: number };
  code: number;
}

/** The reason the real server gives for a bare HTTP code (used by failNext). */
const REASON_BY_CODE: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  406: 'NotAcceptable',
  409: 'Conflict',
  410: 'Expired',
  413: 'RequestEntityTooLarge',
  415: 'UnsupportedMediaType',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

export class ApiError extends Error {
  readonly code: number;
  readonly reason: string;
  readonly details: StatusBody['details'];

  constructor(code: number, reason: string, message: string, details?: StatusBody['details']) {
    super(message);
    this.code = code;
    this.reason = reason;
    this.details = details;
  }

  toStatus(): StatusBody {
    const body: StatusBody = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: this.message, reason: this.reason, code: this.code };
    if (this.details) body.details = this.details;
    return body;
  }
}

function details(r: ResourceKind, name: string): StatusBody['details'] {
  return r.group ? { name, group: r.group, kind: r.plural } : { name, kind: r.plural };
}

export const errors = {
  generic(code: number, message?: string): ApiError {
    const reason = REASON_BY_CODE[code] ?? (code >= 500 ? 'InternalError' : 'BadRequest');
    return new ApiError(code, reason, message ?? `injected failure (${code})`, code === 429 || code === 503 ? { retryAfterSeconds: 1 } : undefined);
  },
  notFound(r: ResourceKind, name: string): ApiError {
    return new ApiError(404, 'NotFound', `${qualifiedResource(r)} "${name}" not found`, details(r, name));
  },
  noSuchPath(): ApiError {
    return new ApiError(404, 'NotFound', 'the server could not find the requested resource', {});
  },
  alreadyExists(r: ResourceKind, name: string): ApiError {
    return new ApiError(409, 'AlreadyExists', `${qualifiedResource(r)} "${name}" already exists`, details(r, name));
  },
  conflict(r: ResourceKind, name: string, why = 'the object has been modified; please apply your changes to the latest version and try again'): ApiError {
    return new ApiError(409, 'Conflict', `Operation cannot be fulfilled on ${qualifiedResource(r)} "${name}": ${why}`, details(r, name));
  },
  invalid(r: ResourceKind, name: string, field: string, problem: string): ApiError {
    return new ApiError(422, 'Invalid', `${qualifiedKind(r)} "${name}" is invalid: ${field}: ${problem}`, {
      name,
      ...(r.group ? { group: r.group } : {}),
      kind: r.kind,
      causes: [{ reason: problem.split(':')[0], message: problem, field }],
    });
  },
  badRequest(message: string): ApiError {
    return new ApiError(400, 'BadRequest', message);
  },
  methodNotAllowed(): ApiError {
    return new ApiError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource', {});
  },
  unsupportedMediaType(contentType: string): ApiError {
    return new ApiError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json (got ${contentType || 'none'})`);
  },
  unauthorized(): ApiError {
    return new ApiError(401, 'Unauthorized', 'Unauthorized');
  },
  /** Watch or list from a resourceVersion whose history has been compacted away. */
  expired(message: string): ApiError {
    return new ApiError(410, 'Expired', message);
  },
  tooLargeResourceVersion(requested: number, current: number): ApiError {
    return new ApiError(504, 'Timeout', `Too large resource version: ${requested}, current: ${current}`, {
      causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }],
      retryAfterSeconds: 1,
    });
  },
};
