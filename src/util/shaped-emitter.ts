// An EventEmitter whose listener table is made up front with the events a response has
// ('close', 'drain'), as Node's streams do: EventEmitter then keeps it as is ("shape
// mode"), where its own table is an object in dictionary mode (about 180 bytes per
// request, held for the whole of it: heap snapshot under h2load). A function, since a
// class cannot set a field before calling its base's constructor. Both protocols'
// responses extend it.
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const { EventEmitter } = process.getBuiltinModule('node:events');
type EventEmitter = import('node:events').EventEmitter;

export const ShapedEmitter = function ShapedEmitter(this: EventEmitter & { _events: object; _eventsCount: number }): void {
  this._events = { close: undefined, drain: undefined };
  this._eventsCount = 0;
  EventEmitter.call(this);
} as unknown as typeof EventEmitter;
Object.setPrototypeOf(ShapedEmitter.prototype, EventEmitter.prototype);
Object.setPrototypeOf(ShapedEmitter, EventEmitter);
