// Which protocol a plain (non-TLS) client connection speaks: HTTP/2 with prior knowledge
// (h2c) begins with the connection preface (RFC 9113 section 3.4), anything else is
// HTTP/1.1. The first bytes are read, then handed on with the socket, so none is lost.
import type { Socket } from 'node:net';

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

/** 'h2', 'http1', or undefined while `head` is a proper prefix of the preface. */
export function prefaceKind(head: Buffer): 'h2' | 'http1' | undefined {
  const n = Math.min(head.length, PREFACE.length);
  for (let i = 0; i < n; i++) if (head[i] !== PREFACE[i]) return 'http1';
  return n === PREFACE.length ? 'h2' : undefined;
}

export type Accept = (socket: Socket, head: Buffer) => void;

const kSniff = Symbol('portico.sniff');
interface Sniff {
  head: Buffer | undefined;
  readonly http1: Accept;
  readonly h2: Accept;
}
type SniffedSocket = Socket & { [kSniff]?: Sniff };

/**
 * Reads `socket` until its protocol is known, then pauses it and calls `http1` or `h2`
 * with what was read (the caller resumes the socket). A client that sends nothing is
 * closed after `timeout` ms, as the HTTP/1.1 header timeout would.
 */
export function sniffProtocol(socket: Socket, timeout: number, http1: Accept, h2: Accept): void {
  (socket as SniffedSocket)[kSniff] = { head: undefined, http1, h2 };
  socket.setTimeout(timeout, onSniffTimeout);
  socket.on('data', onSniffData);
}

function onSniffData(this: SniffedSocket, chunk: Buffer): void {
  const sniff = this[kSniff];
  if (sniff === undefined) return;
  const head = sniff.head === undefined ? chunk : Buffer.concat([sniff.head, chunk]);
  const kind = prefaceKind(head);
  if (kind === undefined) {
    sniff.head = head;
    return;
  }
  this[kSniff] = undefined;
  this.removeListener('data', onSniffData);
  this.setTimeout(0, onSniffTimeout);
  this.removeListener('timeout', onSniffTimeout);
  this.pause();
  if (kind === 'h2') sniff.h2(this, head);
  else sniff.http1(this, head);
}

function onSniffTimeout(this: SniffedSocket): void {
  if (this[kSniff] !== undefined) this.destroy();
}
