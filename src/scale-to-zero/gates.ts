// The data plane's side of scale-to-zero: for each Service that sleeps when idle, when
// it last had a request and how many are in flight (what keeps it awake), and the
// requests held while it has no endpoints. A held request is forwarded as soon as a
// forwarder with endpoints for its backend is compiled, which happens when the route
// table learns of a ready endpoint: no polling. Work is done only for sleepable routes.
import { Counter, Gauge, type Registry } from '../util/prom.ts';
import type { ProxyResponse } from '../proxy/exchange-types.ts';
import type { SleepPolicy } from '../model/config.ts';
import type { RequestContext } from '../proxy/context.ts';
import { sendError } from '../proxy/errors.ts';

/** What the gates tell the control plane (directly, or over IPC from a worker). */
export interface WakeSignals {
  /** Requests wait for this Service: make it ready (scale its workload up). Repeated while they wait. */
  wake(service: string, policy: SleepPolicy): void;
  /** `count` held requests of this Service got 503 at the wake timeout. */
  timedOut(service: string, count: number): void;
}

/** A forwarder as the gates see it: which backend it serves, and whether it has endpoints. */
export interface GatedForwarder {
  readonly backendKey: string;
  readonly hasEndpoints: boolean;
}

/** Something waiting for endpoints: a new request, or a retry after the pod refused to connect. */
export interface Waiter<F extends GatedForwarder = GatedForwarder> {
  readonly ctx: RequestContext;
  readonly backendKey: string;
  /** performance.now() after which it gets 503. */
  readonly deadline: number;
  /** Endpoints are here: go on with this forwarder. */
  proceedWith(forwarder: F): void;
}

/** Seconds a client is told to wait before trying again (Retry-After) after a wake timeout or a full queue. */
const RETRY_AFTER = '5';
/** Between two wake signals for one Service while requests wait (a lost or failed wake is asked again). */
const WAKE_REPEAT_MS = 2_000;
/** First pause before retrying a pod that refused to connect while it boots; doubles up to RETRY_MAX_MS. */
const RETRY_BASE_MS = 25;
const RETRY_MAX_MS = 400;

const kGate = Symbol('portico.sleepGate');
type GatedResponse = ProxyResponse & { [kGate]?: ServiceGate };

/** What one process knows of one sleepable Service. */
export class ServiceGate<F extends GatedForwarder = GatedForwarder> {
  /** "ns/name" */
  readonly service: string;
  policy: SleepPolicy;
  /** Date.now() of the last request begun or finished; starts at creation, so a restart does not look idle. */
  lastActive = Date.now();
  /** Requests (held ones included) and tunnels not finished. */
  inflight = 0;
  /** The latest forwarder compiled for each backend ("ns/svc:port") of this Service. */
  readonly forwarders = new Map<string, F>();
  readonly held = new Set<Waiter<F>>();
  wakeSignalledAt = -Infinity;
  /** Changed since the last activity report. */
  dirty = true;
  private timer: NodeJS.Timeout | undefined = undefined;
  private readonly gates: WakeGates<F>;

  constructor(gates: WakeGates<F>, service: string, policy: SleepPolicy) {
    this.gates = gates;
    this.service = service;
    this.policy = policy;
  }

  /** Held requests allowed in this process: the Service's limit shared among the workers. */
  get maxHeld(): number {
    return Math.max(1, Math.ceil(this.policy.maxHeld / this.gates.workers));
  }

  hold(waiter: Waiter<F>): void {
    const ctx = waiter.ctx;
    if (this.held.size >= this.maxHeld) {
      this.gates.metrics?.rejected.inc({ service: this.service });
      sendError(ctx.res, 503, `service ${this.service} is waking up and already has ${this.policy.maxHeld} requests waiting (portico.dev/max-held-requests)`, {
        headers: [['retry-after', RETRY_AFTER]],
      });
      return;
    }
    this.held.add(waiter);
    this.gates.metrics?.held.inc({ service: this.service });
    ctx.res.once('close', () => this.drop(waiter));
    this.signalWake();
    this.arm();
  }

  /** A pod of this Service refused the connection (it is still booting, or going away): try again shortly, or wait for endpoints. */
  retryLater(waiter: Waiter<F>, attempt: number): void {
    if (performance.now() >= waiter.deadline) {
      this.expire(waiter);
      return;
    }
    const delay = Math.min(RETRY_BASE_MS * 2 ** attempt, RETRY_MAX_MS, Math.max(0, waiter.deadline - performance.now()));
    setTimeout(() => {
      if (waiter.ctx.res.destroyed) return;
      const forwarder = this.forwarders.get(waiter.backendKey);
      if (forwarder !== undefined && forwarder.hasEndpoints) waiter.proceedWith(forwarder);
      else this.hold(waiter);
    }, delay).unref();
  }

  /** A forwarder was compiled for a backend of this Service: it is the one held requests go on with. */
  compiled(forwarder: F): void {
    this.forwarders.set(forwarder.backendKey, forwarder);
    if (!forwarder.hasEndpoints) return;
    // Awake: the next time it has no endpoints, the first held request signals at once.
    this.wakeSignalledAt = -Infinity;
    if (this.held.size === 0) return;
    for (const waiter of [...this.held]) {
      if (waiter.backendKey !== forwarder.backendKey) continue;
      this.remove(waiter);
      waiter.proceedWith(forwarder);
    }
    if (this.held.size === 0) this.disarm();
  }

  private drop(waiter: Waiter<F>): void {
    if (this.remove(waiter) && this.held.size === 0) this.disarm();
  }

  private remove(waiter: Waiter<F>): boolean {
    if (!this.held.delete(waiter)) return false;
    this.gates.metrics?.held.dec({ service: this.service });
    return true;
  }

  private signalWake(): void {
    const now = performance.now();
    if (now - this.wakeSignalledAt < WAKE_REPEAT_MS) return;
    this.wakeSignalledAt = now;
    this.gates.signals.wake(this.service, this.policy);
  }

  /** One timer per Service, for the earliest deadline (and to repeat the wake signal while requests wait). */
  private arm(): void {
    if (this.timer !== undefined) return;
    let next = Infinity;
    for (const w of this.held) if (w.deadline < next) next = w.deadline;
    const delay = Math.max(0, Math.min(next - performance.now(), WAKE_REPEAT_MS));
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.tick();
    }, delay);
    this.timer.unref();
  }

  private disarm(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private tick(): void {
    const now = performance.now();
    let expired = 0;
    for (const waiter of [...this.held]) {
      if (waiter.deadline > now) continue;
      this.remove(waiter);
      this.expire(waiter, false);
      expired++;
    }
    if (expired > 0) this.gates.signals.timedOut(this.service, expired);
    if (this.held.size > 0) {
      this.signalWake();
      this.arm();
    }
  }

  private expire(waiter: Waiter<F>, signal = true): void {
    const ctx = waiter.ctx;
    this.gates.metrics?.timeouts.inc({ service: this.service });
    if (signal) this.gates.signals.timedOut(this.service, 1);
    if (ctx.res.destroyed) return;
    sendError(ctx.res, 503, `service ${this.service} did not become ready within its wake timeout of ${this.policy.wakeTimeoutMs / 1000} s`, {
      headers: [['retry-after', RETRY_AFTER]],
    });
  }

  /** A request for this Service began: it is active until the response closes. */
  begin(ctx: RequestContext): void {
    this.inflight++;
    this.lastActive = Date.now();
    this.dirty = true;
    const res = ctx.res as GatedResponse;
    res[kGate] = this;
    res.once('close', onGatedClose);
  }

  finished(): void {
    this.inflight--;
    this.lastActive = Date.now();
    this.dirty = true;
  }
}

function onGatedClose(this: GatedResponse): void {
  const gate = this[kGate];
  this[kGate] = undefined;
  gate?.finished();
}

interface GateMetrics {
  held: Gauge;
  timeouts: Counter;
  rejected: Counter;
}

/** One entry of an activity report: the Service, Date.now() of its last activity, requests in flight, requests held. */
export type ActivityEntry = readonly [service: string, lastActive: number, inflight: number, held: number];

export class WakeGates<F extends GatedForwarder = GatedForwarder> {
  readonly signals: WakeSignals;
  /** Processes serving traffic (--workers): max-held-requests is shared among them. */
  readonly workers: number;
  readonly metrics: GateMetrics | undefined;
  private readonly gates = new Map<string, ServiceGate<F>>();

  constructor(signals: WakeSignals, options: { workers?: number; registry?: Registry } = {}) {
    this.signals = signals;
    this.workers = Math.max(1, options.workers ?? 1);
    if (options.registry !== undefined) {
      const registers = [options.registry];
      this.metrics = {
        held: new Gauge({ name: 'portico_scale_to_zero_held_requests', help: 'Requests waiting for a sleeping Service to wake', labelNames: ['service'], registers }),
        timeouts: new Counter({ name: 'portico_scale_to_zero_wake_timeouts_total', help: 'Held requests answered 503 because the Service did not wake within portico.dev/wake-timeout', labelNames: ['service'], registers }),
        rejected: new Counter({ name: 'portico_scale_to_zero_held_rejected_total', help: 'Requests answered 503 at once because portico.dev/max-held-requests were already waiting', labelNames: ['service'], registers }),
      };
    }
  }

  /** The gate of a sleepable Service ("ns/name"), made on first use; its policy follows the latest compiled route. */
  gate(service: string, policy: SleepPolicy): ServiceGate<F> {
    let gate = this.gates.get(service);
    if (gate === undefined) {
      gate = new ServiceGate(this, service, policy);
      this.gates.set(service, gate);
    } else {
      gate.policy = policy;
    }
    return gate;
  }

  get(service: string): ServiceGate<F> | undefined {
    return this.gates.get(service);
  }

  /**
   * What changed since the last report (all gates with `full`). A Service with requests
   * in flight reports "active now", so a long request or a WebSocket keeps it awake.
   */
  report(full = false): ActivityEntry[] {
    const out: ActivityEntry[] = [];
    const now = Date.now();
    for (const gate of this.gates.values()) {
      if (!full && !gate.dirty && gate.inflight === 0) continue;
      gate.dirty = false;
      out.push([gate.service, gate.inflight > 0 ? now : gate.lastActive, gate.inflight, gate.held.size]);
    }
    return out;
  }
}
