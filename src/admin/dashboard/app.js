// portico's dashboard: polls /dashboard/state every 2 s (figures, and the route table
// version), fetches /routes again only when the version changed, and renders with DOM
// calls and textContent only (hosts, paths and messages are user data, never HTML).
'use strict';

const POLL_MS = 2000;
let routesVersion = -1;
let routes = null;
let previous = null; // the last /dashboard/state, for rates
let rates = {};

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') node.className = v;
    else if (k.startsWith('data-')) node.setAttribute(k, v);
    else node[k] = v;
  }
  for (const c of children) if (c !== null && c !== undefined) node.append(c instanceof Node ? c : String(c));
  return node;
}

function tags(list) {
  const span = el('span');
  for (const t of list) span.append(el('span', { class: 'tag' }, t));
  return span;
}

function fmtRate(n) { return n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2); }
function fmtMs(seconds) { return seconds < 0.001 ? (seconds * 1e6).toFixed(0) + ' µs' : (seconds * 1000).toFixed(seconds < 0.01 ? 2 : 1) + ' ms'; }

async function getJson(url) {
  const res = await fetch(url, { cache: 'no-store' });
  if (!res.ok) throw new Error(url + ': ' + res.status);
  return res.json();
}

// ---- rendering ----

function renderListeners(state) {
  const ul = document.getElementById('listeners');
  ul.replaceChildren();
  const l = state.listeners;
  if (l.http !== undefined) ul.append(el('li', {}, el('code', {}, 'HTTP :' + l.http), ' Ingress hosts'));
  if (l.https !== undefined) ul.append(el('li', {}, el('code', {}, 'HTTPS :' + l.https), ' Ingress hosts (certificate by SNI)'));
  for (const g of (routes && routes.gatewayApi.listeners) || []) {
    ul.append(el('li', {}, el('code', {}, g.protocol + ' :' + g.port), ' Gateway listener' + (g.hostnames.filter(Boolean).length ? ' for ' + g.hostnames.filter(Boolean).join(', ') : '')));
  }
  if (l.admin !== undefined) ul.append(el('li', {}, el('code', {}, 'admin :' + l.admin), ' this dashboard, /metrics, /routes'));
}

function backendCell(b) {
  const ready = b.endpoints.length;
  return el('td', {},
    el('code', {}, b.service + ':' + b.port),
    el('div', { class: b.state === 'ok' ? 'ok' : 'bad' }, b.state === 'ok' ? ready + ' ready endpoint' + (ready === 1 ? '' : 's') : b.state),
    ready ? el('div', { class: 'mono' }, b.endpoints.join(' ')) : null);
}

function renderHosts() {
  const root = document.getElementById('hosts');
  root.replaceChildren();
  const names = Object.keys(routes.hosts).sort();
  if (names.length === 0) root.append(el('p', {}, 'No Ingress rule is served yet.'));
  for (const host of names) {
    const section = el('div', { class: 'host', 'data-host': host });
    section.append(el('h3', {}, host === '*' ? '* (rules without host)' : host, el('span', { class: 'host-figures', 'data-figures': host }, figuresText(host))));
    const table = el('table', {}, el('thead', {}, el('tr', {}, ...['path', 'type', 'Ingress', 'backend', 'policies'].map((h) => el('th', {}, h)))));
    const body = el('tbody');
    for (const [path, p] of Object.entries(routes.hosts[host])) {
      body.append(el('tr', { 'data-path': path },
        el('td', {}, el('code', {}, path)), el('td', {}, p.pathType), el('td', {}, p.ingress), backendCell(p.backend), el('td', {}, tags(p.policies))));
    }
    table.append(body);
    section.append(table);
    root.append(section);
  }
  if (routes.defaultBackend) {
    const d = routes.defaultBackend;
    root.append(el('div', { class: 'host', 'data-host': '(default backend)' }, el('h3', {}, 'default backend (', d.ingress, ')'),
      el('table', {}, el('tbody', {}, el('tr', {}, el('td', {}, 'anything no rule matches'), backendCell(d.backend), el('td', {}, tags(d.policies)))))));
  }
  const g = routes.gatewayApi.routes;
  document.getElementById('gateway-section').hidden = g.length === 0;
  const groot = document.getElementById('gateway');
  groot.replaceChildren();
  if (g.length) {
    const table = el('table', {}, el('thead', {}, el('tr', {}, ...['port', 'host', 'path', 'conditions', 'HTTPRoute', 'backends', 'policies'].map((h) => el('th', {}, h)))));
    const body = el('tbody');
    for (const r of g) {
      const cond = [r.method, ...(r.headers || []), ...(r.query || [])].filter(Boolean).join(', ');
      const backends = el('td');
      for (const b of r.backends) backends.append(el('code', {}, b.service + ':' + b.port), ' ×' + b.weight + ' ', el('span', { class: b.state === 'ok' ? 'ok' : 'bad' }, b.state === 'ok' ? b.endpoints.length + ' ready' : b.state), el('br'));
      body.append(el('tr', {}, el('td', {}, r.port), el('td', {}, r.host), el('td', {}, el('code', {}, r.path), ' ', r.pathType), el('td', {}, cond), el('td', {}, r.httpRoute), backends, el('td', {}, tags(r.policies))));
    }
    table.append(body);
    groot.append(table);
  }
}

function renderProblems() {
  const root = document.getElementById('problems');
  root.replaceChildren();
  const byObject = new Map();
  for (const p of routes.problems) {
    const key = p.object.kind + ' ' + (p.object.namespace ? p.object.namespace + '/' : '') + p.object.name;
    if (!byObject.has(key)) byObject.set(key, []);
    byObject.get(key).push(p);
  }
  if (byObject.size === 0) root.append(el('p', { class: 'ok' }, 'No problem found in the objects portico reads.'));
  for (const [object, list] of [...byObject].sort((a, b) => a[0].localeCompare(b[0]))) {
    const ul = el('ul');
    for (const p of list) ul.append(el('li', { class: p.severity }, el('strong', {}, p.reason), ': ', p.message));
    root.append(el('div', { class: 'problem', 'data-object': object }, el('h3', {}, object), ul));
  }
  const ignored = document.getElementById('ignored');
  // missingClass: its spec.ingressClassName names no IngressClass at all (a typo, or a class not
  // created yet): maybe meant for portico, so marked as a warning, as portico logs it.
  ignored.replaceChildren(...routes.ignoredIngresses.map((i) => el('li', {},
    el('code', {}, i.ingress),
    ...(i.missingClass === undefined ? [] : [' ', el('strong', { class: 'warning', 'data-missing-class': i.missingClass }, 'class "' + i.missingClass + '" does not exist')]),
    ': ', i.reason)));
  document.getElementById('ignored-section').hidden = routes.ignoredIngresses.length === 0;
}

function figuresText(host) {
  const r = rates[host];
  if (!r) return '';
  return fmtRate(r.rps) + ' req/s · ' + (r.errorRatio * 100).toFixed(1) + '% errors' + (r.latency >= 0 ? ' · ' + fmtMs(r.latency) : '');
}

function renderTraffic(state) {
  const body = document.querySelector('#traffic tbody');
  body.replaceChildren();
  const hosts = Object.keys(state.hosts).sort();
  for (const host of hosts) {
    const t = state.hosts[host];
    const r = rates[host] || { rps: 0, errorRatio: 0, latency: -1 };
    body.append(el('tr', { 'data-host': host },
      el('td', {}, host),
      el('td', { class: 'num' }, fmtRate(r.rps)),
      el('td', { class: 'num' + (r.errorRatio > 0 ? ' bad' : '') }, (r.errorRatio * 100).toFixed(1) + '%'),
      el('td', { class: 'num' }, r.latency >= 0 ? fmtMs(r.latency) : '–'),
      el('td', { class: 'num' }, t.requests)));
  }
  for (const span of document.querySelectorAll('[data-figures]')) span.textContent = figuresText(span.getAttribute('data-figures'));
}

function computeRates(state) {
  rates = {};
  if (!previous) return;
  const seconds = (state.time - previous.time) / 1000;
  if (seconds <= 0) return;
  for (const [host, t] of Object.entries(state.hosts)) {
    const p = previous.hosts[host] || { requests: 0, errors: 0, latencySum: 0, latencyCount: 0 };
    // A counter that went down was reset (a route removed and back): count from zero.
    const dr = t.requests >= p.requests ? t.requests - p.requests : t.requests;
    const de = t.errors >= p.errors ? t.errors - p.errors : t.errors;
    const dc = t.latencyCount >= p.latencyCount ? t.latencyCount - p.latencyCount : t.latencyCount;
    const ds = t.latencyCount >= p.latencyCount ? t.latencySum - p.latencySum : t.latencySum;
    rates[host] = { rps: dr / seconds, errorRatio: dr > 0 ? de / dr : 0, latency: dc > 0 ? ds / dc : -1 };
  }
}

async function poll() {
  const live = document.getElementById('live');
  try {
    const state = await getJson('/dashboard/state');
    if (state.version !== routesVersion) {
      routes = await getJson('/routes');
      routesVersion = state.version;
      renderHosts();
      renderProblems();
    }
    computeRates(state);
    previous = state;
    renderListeners(state);
    renderTraffic(state);
    const hostCount = Object.keys(routes.hosts).length;
    document.getElementById('summary').textContent = 'route table v' + routes.version + ' · ' + routes.routes + ' routes · ' + hostCount + ' host' + (hostCount === 1 ? '' : 's') + ' · ' + routes.problems.length + ' problem' + (routes.problems.length === 1 ? '' : 's') + ' · updated ' + new Date(state.time).toLocaleTimeString();
    live.classList.remove('stale');
  } catch {
    live.classList.add('stale');
  }
  setTimeout(poll, POLL_MS);
}

// ---- explain ----

async function explain(event) {
  event.preventDefault();
  const params = new URLSearchParams({ url: document.getElementById('explain-url').value, method: document.getElementById('explain-method').value });
  for (const line of document.getElementById('explain-headers').value.split('\n')) if (line.includes(':')) params.append('header', line.trim());
  const box = document.getElementById('explain-result');
  box.hidden = false;
  box.className = '';
  try {
    const r = await getJson('/routes/explain?' + params);
    box.setAttribute('data-reason', r.reason);
    box.className = r.reason === 'matched' || r.reason === 'default-backend' ? '' : r.reason === 'no-endpoints' ? 'down' : 'miss';
    const verdict = r.outcome === 'forwarded' ? 'forwarded to the backend' : 'portico answers ' + r.outcome;
    const parts = [el('div', {}, el('strong', {}, r.reason), ' — ', verdict), el('p', {}, r.message)];
    if (r.route) parts.push(el('div', {}, 'route ', el('code', {}, r.route.id), r.route.policies.length ? ' · policies ' : '', tags(r.route.policies)));
    if (r.candidates) parts.push(el('div', {}, 'rules tried: ', ...r.candidates.map((c) => el('span', { class: 'tag' }, c.path + ' (' + c.pathType + ', ' + c.object + ')'))));
    box.replaceChildren(...parts);
  } catch (err) {
    box.className = 'miss';
    box.setAttribute('data-reason', 'error');
    box.replaceChildren(el('p', {}, 'explain failed: ' + err.message));
  }
}

document.getElementById('explain-form').addEventListener('submit', explain);
poll();
