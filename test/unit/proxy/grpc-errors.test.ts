// Which requests are gRPC, and the grpc-status portico's own answers map to.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { grpcStatusFor, isGrpcRequest } from '../../../src/proxy/errors.ts';

test('gRPC requests are told by their content-type, any case, with or without a subtype', () => {
  assert.equal(isGrpcRequest(['Content-Type', 'application/grpc']), true);
  assert.equal(isGrpcRequest(['content-type', 'application/grpc+proto']), true);
  assert.equal(isGrpcRequest(['content-type', 'Application/GRPC; charset=utf-8']), true);
  assert.equal(isGrpcRequest(['content-type', 'application/grpc-web']), false, 'grpc-web is answered as HTTP');
  assert.equal(isGrpcRequest(['content-type', 'application/json']), false);
  assert.equal(isGrpcRequest(['host', 'x']), false);
});

test('statuses map as in grpc/doc/http-grpc-status-mapping.md, timeouts to DEADLINE_EXCEEDED', () => {
  assert.equal(grpcStatusFor(503), 14);
  assert.equal(grpcStatusFor(502), 14);
  assert.equal(grpcStatusFor(429), 14);
  assert.equal(grpcStatusFor(504), 4);
  assert.equal(grpcStatusFor(404), 12);
  assert.equal(grpcStatusFor(403), 7);
  assert.equal(grpcStatusFor(400), 13);
  assert.equal(grpcStatusFor(500), 13);
});
