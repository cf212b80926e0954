// A connected pair of TCP sockets on loopback for tests that write raw bytes: the reader
// collects everything it gets.
import net from 'node:net';

export interface SocketPair {
  writer: net.Socket;
  reader: net.Socket;
  /** Everything the reader got so far. */
  received: () => Buffer;
  /** Resolves when the reader sees the writer's end. */
  ended: Promise<void>;
  close: () => void;
}

export async function socketPair(): Promise<SocketPair> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const accepted = new Promise<net.Socket>((resolve) => server.once('connection', resolve));
  const writer = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
  await new Promise<void>((resolve) => writer.once('connect', resolve));
  const reader = await accepted;
  const chunks: Buffer[] = [];
  reader.on('data', (chunk: Buffer) => chunks.push(chunk));
  const ended = new Promise<void>((resolve) => reader.once('end', resolve));
  return {
    writer,
    reader,
    received: () => Buffer.concat(chunks),
    ended,
    close: () => {
      writer.destroy();
      reader.destroy();
      server.close();
    },
  };
}
