// A real gRPC server and client (@grpc/grpc-js) for black-box tests, without .proto
// files: messages are raw bytes. The service covers the four call kinds, errors with
// trailing metadata, and a slow method that records whether its call was cancelled.
import * as grpc from '@grpc/grpc-js';
import net from 'node:net';

const raw = {
  requestSerialize: (b: Buffer) => b,
  requestDeserialize: (b: Buffer) => b,
  responseSerialize: (b: Buffer) => b,
  responseDeserialize: (b: Buffer) => b,
};

/** The Echo service's methods under the service name `service` (a pod may serve several names). */
export function echoService(service = 'test.Echo') {
  return {
    unary: { path: `/${service}/Unary`, requestStream: false, responseStream: false, ...raw },
    serverStream: { path: `/${service}/ServerStream`, requestStream: false, responseStream: true, ...raw },
    clientStream: { path: `/${service}/ClientStream`, requestStream: true, responseStream: false, ...raw },
    bidi: { path: `/${service}/Bidi`, requestStream: true, responseStream: true, ...raw },
    fail: { path: `/${service}/Fail`, requestStream: false, responseStream: false, ...raw },
    slow: { path: `/${service}/Slow`, requestStream: false, responseStream: false, ...raw },
  } satisfies grpc.ServiceDefinition;
}

export const ECHO_SERVICE = echoService();

export interface EchoClient extends grpc.Client {
  unary(req: Buffer, metadata: grpc.Metadata, options: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: Buffer) => void): grpc.ClientUnaryCall;
  serverStream(req: Buffer, metadata?: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<Buffer>;
  clientStream(metadata: grpc.Metadata, options: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: Buffer) => void): grpc.ClientWritableStream<Buffer>;
  bidi(metadata?: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientDuplexStream<Buffer, Buffer>;
  fail(req: Buffer, metadata: grpc.Metadata, options: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: Buffer) => void): grpc.ClientUnaryCall;
  slow(req: Buffer, metadata: grpc.Metadata, options: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: Buffer) => void): grpc.ClientUnaryCall;
}

type EchoClientConstructor = new (address: string, credentials: grpc.ChannelCredentials, options?: grpc.ClientOptions) => EchoClient;

/**
 * A client of the Echo service (named `options.service`, default test.Echo) at
 * 127.0.0.1:port with `:authority` set to `authority`: over h2c, or over TLS (h2) trusting
 * `options.ca` and checking the certificate against `authority`.
 */
export function echoClient(port: number, authority: string, options: { service?: string; ca?: Buffer } = {}): EchoClient {
  const Client = grpc.makeGenericClientConstructor(echoService(options.service), 'Echo') as unknown as EchoClientConstructor;
  const credentials = options.ca === undefined ? grpc.credentials.createInsecure() : grpc.credentials.createSsl(options.ca);
  return new Client(`127.0.0.1:${port}`, credentials, {
    'grpc.default_authority': authority,
    ...(options.ca === undefined ? {} : { 'grpc.ssl_target_name_override': authority }),
    'grpc.max_receive_message_length': 16 * 1024 * 1024,
    'grpc.max_send_message_length': 16 * 1024 * 1024,
  });
}

export function unary(client: EchoClient, method: 'unary' | 'fail' | 'slow', req: Buffer, options: grpc.CallOptions = {}, metadata = new grpc.Metadata()): Promise<{ err: grpc.ServiceError | null; res?: Buffer; trailers?: grpc.Metadata }> {
  return new Promise((resolve) => {
    let trailers: grpc.Metadata | undefined;
    const call = client[method](req, metadata, options, (err, res) => {
      // The status event (with trailing metadata) comes with or just after the callback.
      setImmediate(() => resolve({ err, res, trailers }));
    });
    call.on('status', (status: grpc.StatusObject) => {
      trailers = status.metadata;
    });
  });
}

export interface GrpcServer {
  readonly port: number;
  /**
   * Name of this server, in every unary reply's "x-server" metadata (with the request's
   * "x-" metadata echoed as "echo-x-...", so a test sees what reached the pod).
   */
  readonly name: string;
  /** Slow calls whose client cancelled them (the pod saw the cancel). */
  readonly cancelled: string[];
  close(): Promise<void>;
}

/** A gRPC server (h2c on loopback) serving the Echo methods under each of `services`. */
export async function startGrpcServer(name: string, services: readonly string[] = ['test.Echo']): Promise<GrpcServer> {
  const server = new grpc.Server({ 'grpc.max_receive_message_length': 16 * 1024 * 1024, 'grpc.max_send_message_length': 16 * 1024 * 1024 });
  const cancelled: string[] = [];
  const meta = (request: grpc.Metadata) => {
    const m = new grpc.Metadata();
    m.set('x-server', name);
    for (const [key, value] of Object.entries(request.getMap())) if (key.startsWith('x-')) m.set(`echo-${key}`, String(value));
    return m;
  };
  const trailing = () => {
    const m = new grpc.Metadata();
    m.set('x-trailer', `from ${name}`);
    return m;
  };
  const handlers: grpc.UntypedServiceImplementation = {
    unary: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
      call.sendMetadata(meta(call.metadata));
      const authority = call.getPath();
      cb(null, Buffer.concat([Buffer.from(`${name}:${authority}:`), call.request]), trailing());
    },
    serverStream: (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
      const count = Number(call.request.toString()) || 3;
      for (let i = 0; i < count; i++) call.write(Buffer.from(`${name} message ${i}`));
      call.end(trailing());
    },
    clientStream: (call: grpc.ServerReadableStream<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
      let bytes = 0;
      let messages = 0;
      call.on('data', (b: Buffer) => {
        bytes += b.length;
        messages++;
      });
      call.on('end', () => cb(null, Buffer.from(`${messages} messages, ${bytes} bytes`), trailing()));
    },
    bidi: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
      call.on('data', (b: Buffer) => call.write(Buffer.concat([Buffer.from('echo '), b])));
      call.on('end', () => call.end(trailing()));
    },
    fail: (_call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
      const m = trailing();
      m.set('x-reason', 'asked to fail');
      cb({ code: grpc.status.NOT_FOUND, details: 'no such thing', metadata: m });
    },
    slow: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
      const ms = Number(call.request.toString()) || 5000;
      const timer = setTimeout(() => cb(null, Buffer.from('slow done')), ms);
      call.on('cancelled', () => {
        clearTimeout(timer);
        cancelled.push(call.request.toString());
      });
    },
  };
  for (const service of services) server.addService(echoService(service), handlers);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  return {
    port,
    name,
    cancelled,
    close: () => new Promise<void>((resolve) => server.tryShutdown(() => resolve())),
  };
}

/** The bytes every HTTP/2 connection opens with (RFC 9113 3.4). */
const H2_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');

export interface ProtocolTap {
  readonly port: number;
  /** One entry per connection portico opened: "h2c" when it began with the HTTP/2 preface. */
  readonly connections: ('h2c' | 'other')[];
  close(): Promise<void>;
}

/**
 * A TCP relay in front of a pod that notes how each connection to it begins, so a test
 * can show what protocol portico spoke to the pod (a gRPC server would only fail on
 * HTTP/1.1; this says so positively).
 */
export async function startProtocolTap(target: number): Promise<ProtocolTap> {
  const connections: ('h2c' | 'other')[] = [];
  const sockets = new Set<net.Socket>();
  // No Nagle: a relay that holds small writes back would add 40 ms to each call.
  const server = net.createServer({ noDelay: true }, (socket) => {
    const upstream = net.connect({ port: target, host: '127.0.0.1', noDelay: true });
    for (const s of [socket, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    }
    socket.on('error', () => upstream.destroy());
    upstream.on('error', () => socket.destroy());
    upstream.pipe(socket);
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const seen = head.subarray(0, H2_PREFACE.length);
      if (head.length < H2_PREFACE.length && seen.equals(H2_PREFACE.subarray(0, seen.length))) return;
      connections.push(seen.equals(H2_PREFACE) ? 'h2c' : 'other');
      socket.off('data', onData);
      upstream.write(head);
      socket.pipe(upstream);
    };
    socket.on('data', onData);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    connections,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

export { grpc };
