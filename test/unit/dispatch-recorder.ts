// A DispatchHandler that records every call, for the tests of portico's upstream
// clients (HTTP/1.1 and HTTP/2), which implement undici's dispatch contract.
import assert from 'node:assert/strict';
import type { Dispatcher } from 'undici';

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export type ErrorWithCode = Error & { code?: string };

/** Records every handler call, and checks that the request ends exactly once. */
export class Recorder implements Dispatcher.DispatchHandler {
  readonly events: string[] = [];
  controller: Dispatcher.DispatchController | undefined = undefined;
  status = 0;
  statusMessage = '';
  headers: Record<string, string | string[] | undefined> = {};
  readonly informational: { status: number; headers: Record<string, string | string[] | undefined> }[] = [];
  readonly chunks: Buffer[] = [];
  bodySent = 0;
  requestSent = false;
  error: ErrorWithCode | undefined = undefined;
  readonly done: Promise<void>;
  private resolve!: () => void;
  /** Optional hooks for a test to act inside a call. */
  onStart: ((c: Dispatcher.DispatchController) => void) | undefined = undefined;
  onData: ((c: Dispatcher.DispatchController, chunk: Buffer) => void) | undefined = undefined;

  constructor() {
    this.done = new Promise((resolve) => (this.resolve = resolve));
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.events.push('start');
    this.controller = controller;
    this.onStart?.(controller);
  }
  onBodySent(chunk: Buffer): void {
    this.bodySent += chunk.length;
  }
  onRequestSent(): void {
    this.requestSent = true;
  }
  onResponseStart(_c: Dispatcher.DispatchController, status: number, headers: Record<string, string | string[] | undefined>, statusMessage?: string): void {
    this.events.push(`response ${status}`);
    if (status < 200) {
      this.informational.push({ status, headers });
      return;
    }
    this.status = status;
    this.statusMessage = statusMessage ?? '';
    this.headers = headers;
  }
  onResponseData(c: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.events.at(-1) !== 'data') this.events.push('data');
    this.chunks.push(chunk);
    this.onData?.(c, chunk);
  }
  /** What onResponseEnd was given. */
  trailers: Record<string, string | string[] | undefined> = {};
  onResponseEnd(_c: Dispatcher.DispatchController, trailers?: Record<string, string | string[] | undefined>): void {
    this.events.push('end');
    this.trailers = trailers ?? {};
    this.resolve();
  }
  onResponseError(_c: Dispatcher.DispatchController, err: Error): void {
    this.events.push('error');
    this.error = err;
    this.resolve();
  }

  get body(): string {
    return Buffer.concat(this.chunks).toString('latin1');
  }
  get bytes(): number {
    let n = 0;
    for (const c of this.chunks) n += c.length;
    return n;
  }

  /** Waits for the end (or error), then a little more to see that nothing follows. */
  async finished(): Promise<this> {
    await this.done;
    await delay(20);
    const last = this.events.filter((e) => e === 'end' || e === 'error');
    assert.equal(last.length, 1, `one end or error, got ${this.events.join(', ')}`);
    assert.equal(this.events.at(-1), last[0], `nothing after the ${last[0]}: ${this.events.join(', ')}`);
    return this;
  }
}

