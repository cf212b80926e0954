// Slots on each response that the proxy layer fills: the request's context, its route and
// the exchange with the pod. The HTTP/1.1 and HTTP/2 responses declare them when they are
// made, so filling them keeps the response's hidden class: added afterwards, they cost
// three map transitions and a property array on every request.
export const kContext = Symbol('portico.context');
export const kRoute = Symbol('portico.route');
export const kExchange = Symbol('portico.exchange');
