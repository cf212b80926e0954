// A real gRPC server and client (@grpc/grpc-js) for black-box tests, without .proto
// files: messages are raw bytes. The service covers the four call kinds, errors with
// trailing metadata, and a slow method that records whether its call was cancelled.
import * as grpc from '@grpc/grpc-js';

const raw = {
  requestSerialize: (b: Buffer) => b,
  requestDeserialize: (b: Buffer) => b,
  responseSerialize: (b: Buffer) => b,
  responseDeserialize: (b: Buffer) => b,
};

export const ECHO_SERVICE = {
  unary: { path: '/test.Echo/Unary', requestStream: false, responseStream: false, ...raw },
  serverStream: { path: '/test.Echo/ServerStream', requestStream: false, responseStream: true, ...raw },
  clientStream: { path: '/test.Echo/ClientStream', requestStream: true, responseStream: false, ...raw },
  bidi: { path: '/test.Echo/Bidi', requestStream: true, responseStream: true, ...raw },
  fail: { path: '/test.Echo/Fail', requestStream: false, responseStream: false, ...raw },
  slow: { path: '/test.Echo/Slow', requestStream: false, responseStream: false, ...raw },
} satisfies grpc.ServiceDefinition;

export interface EchoClient extends grpc.Client {
  unary(req: Buffer, metadata: grpc.Metadata, options: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: Buffer) => void): grpc.ClientUnaryCall;
  serverStream(req: Buffer, metadata?: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<Buffer>;
  clientStream(metadata: grpc.Metadata, options: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: Buffer) => void): grpc.ClientWritableStream<Buffer>;
  bidi(metadata?: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientDuplexStream<Buffer, Buffer>;
  fail(req: Buffer, metadata: grpc.Metadata, options: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: Buffer) => void): grpc.ClientUnaryCall;
  slow(req: Buffer, metadata: grpc.Metadata, options: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: Buffer) => void): grpc.ClientUnaryCall;
}

const EchoClientConstructor = grpc.makeGenericClientConstructor(ECHO_SERVICE, 'Echo') as unknown as new (address: string, credentials: grpc.ChannelCredentials, options?: grpc.ClientOptions) => EchoClient;

/** A client of the Echo service at host:port over h2c, with `:authority` set to `authority`. */
export function echoClient(port: number, authority: string): EchoClient {
  return new EchoClientConstructor(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), {
    'grpc.default_authority': authority,
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
  /** Name of this server, in every reply's "x-server" metadata. */
  readonly name: string;
  /** Slow calls whose client cancelled them (the pod saw the cancel). */
  readonly cancelled: string[];
  close(): Promise<void>;
}

export async function startGrpcServer(name: string): Promise<GrpcServer> {
  const server = new grpc.Server({ 'grpc.max_receive_message_length': 16 * 1024 * 1024, 'grpc.max_send_message_length': 16 * 1024 * 1024 });
  const cancelled: string[] = [];
  const meta = () => {
    const m = new grpc.Metadata();
    m.set('x-server', name);
    return m;
  };
  const trailing = () => {
    const m = new grpc.Metadata();
    m.set('x-trailer', `from ${name}`);
    return m;
  };
  server.addService(ECHO_SERVICE, {
    unary: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
      call.sendMetadata(meta());
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
  });
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

export { grpc };
