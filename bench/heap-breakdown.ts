// What holds the memory of a V8 heap snapshot (issue 12): retained sizes from the
// dominator tree, by constructor and below a few known roots of portico.
//   node --max-old-space-size=8000 bench/heap-breakdown.ts FILE.heapsnapshot [root class names...]
// Prints: the self size by node type and by constructor (top 40), then for each root
// class found (default: ObjectStore, ImmutableRouteTable, Controller, ...) its retained
// size and the retained size below each of its properties, two levels deep.
// Weak edges do not retain, as in Chrome's DevTools.
import { readFileSync } from 'node:fs';

const file = process.argv[2];
if (!file) throw new Error('usage: bench/heap-breakdown.ts FILE.heapsnapshot [root class names...]');
const roots = process.argv.length > 3 ? process.argv.slice(3) : ['ObjectStore', 'ImmutableRouteTable', 'RouteTableHolder', 'Controller', 'ManifestDirectorySource', 'ClusterSource', 'IngressAssembly', 'BackendResolver', 'EndpointRegistry', 'ProxyMetrics', 'IngressStatusWriter', 'GatewayStatusWriter', 'UpstreamPools'];

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]]; edge_fields: string[]; edge_types: [string[]] } };
  nodes: number[];
  edges: number[];
  strings: string[];
}
const snap = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
const { meta } = snap.snapshot;
const NF = meta.node_fields.length;
const EF = meta.edge_fields.length;
const nType = meta.node_fields.indexOf('type');
const nName = meta.node_fields.indexOf('name');
const nSize = meta.node_fields.indexOf('self_size');
const nEdges = meta.node_fields.indexOf('edge_count');
const eType = meta.edge_fields.indexOf('type');
const eName = meta.edge_fields.indexOf('name_or_index');
const eTo = meta.edge_fields.indexOf('to_node');
const nodeTypes = meta.node_types[0];
const edgeTypes = meta.edge_types[0];
const WEAK = edgeTypes.indexOf('weak');
const SHORTCUT = edgeTypes.indexOf('shortcut');
const ELEMENT = edgeTypes.indexOf('element');
const HIDDEN = edgeTypes.indexOf('hidden');
const { nodes, edges, strings } = snap;
const count = nodes.length / NF;

const firstEdge = new Uint32Array(count + 1);
for (let i = 0, e = 0; i < count; i++) {
  firstEdge[i] = e;
  e += nodes[i * NF + nEdges]! * EF;
}
firstEdge[count] = edges.length;
const selfSize = (i: number) => nodes[i * NF + nSize]!;
const typeOf = (i: number) => nodeTypes[nodes[i * NF + nType]!]!;
const nameOf = (i: number) => strings[nodes[i * NF + nName]!]!;
const edgeName = (e: number) => {
  const t = edges[e + eType]!;
  return t === ELEMENT || t === HIDDEN ? `[${edges[e + eName]}]` : strings[edges[e + eName]!]!;
};
const retains = (e: number) => edges[e + eType] !== WEAK && edges[e + eType] !== SHORTCUT;

// Post-order DFS from node 0 (the synthetic root), then Cooper-Harvey-Kennedy dominators.
const order = new Int32Array(count).fill(-1); // post-order number of each node
const byOrder = new Uint32Array(count);
{
  const stack = new Uint32Array(count);
  const edgeAt = new Uint32Array(count);
  const seen = new Uint8Array(count);
  let top = 0;
  let n = 0;
  stack[0] = 0;
  edgeAt[0] = firstEdge[0]!;
  seen[0] = 1;
  while (top >= 0) {
    const v = stack[top]!;
    if (edgeAt[top]! < firstEdge[v + 1]!) {
      const e = edgeAt[top]!;
      edgeAt[top] = e + EF;
      if (!retains(e)) continue;
      const w = edges[e + eTo]! / NF;
      if (seen[w]) continue;
      seen[w] = 1;
      top++;
      stack[top] = w;
      edgeAt[top] = firstEdge[w]!;
    } else {
      order[v] = n;
      byOrder[n++] = v;
      top--;
    }
  }
}
const reachable = (() => {
  let n = 0;
  for (let i = 0; i < count; i++) if (order[i]! >= 0) n++;
  return n;
})();
// Predecessors, in post-order numbers.
const predCount = new Uint32Array(reachable + 1);
for (let v = 0; v < count; v++) {
  if (order[v]! < 0) continue;
  for (let e = firstEdge[v]!; e < firstEdge[v + 1]!; e += EF) if (retains(e)) predCount[order[edges[e + eTo]! / NF]!]!++;
}
const predStart = new Uint32Array(reachable + 1);
for (let i = 0; i < reachable; i++) predStart[i + 1] = predStart[i]! + predCount[i]!;
const preds = new Uint32Array(predStart[reachable]!);
const fill = predStart.slice();
for (let v = 0; v < count; v++) {
  if (order[v]! < 0) continue;
  for (let e = firstEdge[v]!; e < firstEdge[v + 1]!; e += EF) if (retains(e)) preds[fill[order[edges[e + eTo]! / NF]!]!++] = order[v]!;
}
const UNDEF = 0xffffffff;
const idom = new Uint32Array(reachable).fill(UNDEF);
const rootOrder = reachable - 1;
idom[rootOrder] = rootOrder;
for (let changed = true; changed; ) {
  changed = false;
  for (let b = rootOrder - 1; b >= 0; b--) {
    let dom = UNDEF;
    for (let p = predStart[b]!; p < predStart[b + 1]!; p++) {
      let a = preds[p]!;
      if (idom[a] === UNDEF) continue;
      if (dom === UNDEF) {
        dom = a;
        continue;
      }
      let c = dom;
      while (a !== c) {
        while (a < c) a = idom[a]!;
        while (c < a) c = idom[c]!;
      }
      dom = a;
    }
    if (dom !== UNDEF && idom[b] !== dom) {
      idom[b] = dom;
      changed = true;
    }
  }
}
const retained = new Float64Array(count);
for (let o = 0; o < reachable; o++) retained[byOrder[o]!]! += selfSize(byOrder[o]!);
for (let o = 0; o < rootOrder; o++) retained[byOrder[idom[o]!]!]! += retained[byOrder[o]!]!;
const dominator = (v: number) => byOrder[idom[order[v]!]!]!;

const mb = (bytes: number) => (bytes / 1e6).toFixed(1).padStart(7);
console.log(`${file}: ${count} nodes, ${reachable} reachable, ${mb(retained[0]!)} MB retained from the root`);

const group = (key: (i: number) => string, top: number) => {
  const sums = new Map<string, { self: number; n: number }>();
  for (let i = 0; i < count; i++) {
    if (order[i]! < 0) continue;
    const k = key(i);
    const s = sums.get(k) ?? { self: 0, n: 0 };
    s.self += selfSize(i);
    s.n++;
    sums.set(k, s);
  }
  for (const [k, s] of [...sums].sort((a, b) => b[1].self - a[1].self).slice(0, top)) console.log(`${mb(s.self)} MB  ${String(s.n).padStart(8)}  ${k.slice(0, 100)}`);
};
console.log('\nself size by node type:');
group(typeOf, 20);
console.log('\nself size by constructor (object nodes) / type (others), top 40:');
group((i) => (typeOf(i) === 'object' || typeOf(i) === 'closure' ? `${typeOf(i)} ${nameOf(i)}` : typeOf(i) === 'hidden' || typeOf(i) === 'array' || typeOf(i) === 'object shape' ? `${typeOf(i)} ${nameOf(i)}` : typeOf(i)), 40);

// Strings: how many bytes are copies of a string that occurs more than once.
{
  const byValue = new Map<string, { n: number; size: number }>();
  for (let i = 0; i < count; i++) {
    if (order[i]! < 0 || !typeOf(i).includes('string')) continue;
    const k = nameOf(i);
    const s = byValue.get(k) ?? { n: 0, size: 0 };
    s.n++;
    s.size += selfSize(i);
    byValue.set(k, s);
  }
  let dupBytes = 0;
  for (const s of byValue.values()) if (s.n > 1) dupBytes += s.size - s.size / s.n;
  console.log(`\nstrings: ${byValue.size} distinct values; ${mb(dupBytes)} MB in extra copies of repeated values; most repeated:`);
  for (const [k, s] of [...byValue].sort((a, b) => b[1].size - b[1].size / b[1].n - (a[1].size - a[1].size / a[1].n)).slice(0, 15)) console.log(`${mb(s.size - s.size / s.n)} MB  ${String(s.n).padStart(8)}×  ${JSON.stringify(k.slice(0, 60))}`);
}

// Below known roots: the instances of each class, and under each property of the first
// instance, the retained size (what freeing that property would free).
const children = (v: number) => {
  const out: { name: string; to: number }[] = [];
  for (let e = firstEdge[v]!; e < firstEdge[v + 1]!; e += EF) {
    if (!retains(e)) continue;
    const to = edges[e + eTo]! / NF;
    if (order[to]! >= 0 && dominator(to) === v) out.push({ name: edgeName(e), to });
  }
  return out.sort((a, b) => retained[b.to]! - retained[a.to]!);
};
const show = (v: number, depth: number, indent: string) => {
  if (depth === 0) return;
  const list = children(v);
  for (const c of list.slice(0, 8)) {
    if (retained[c.to]! < 200_000) break;
    console.log(`${indent}${mb(retained[c.to]!)} MB  .${c.name}  (${typeOf(c.to)} ${nameOf(c.to).slice(0, 40)})`);
    show(c.to, depth - 1, indent + '    ');
  }
};
console.log('\nbelow known roots (retained; children are the objects each one dominates):');
for (const root of roots) {
  const found: number[] = [];
  for (let i = 0; i < count; i++) if (order[i]! >= 0 && typeOf(i) === 'object' && nameOf(i) === root) found.push(i);
  if (found.length === 0) continue;
  found.sort((a, b) => retained[b]! - retained[a]!);
  console.log(`${root}: ${found.length} instance(s), ${mb(found.reduce((s, i) => s + retained[i]!, 0))} MB retained; the largest:`);
  show(found[0]!, 3, '    ');
}

// The largest dominators overall, by constructor: which kinds of object own the heap.
console.log('\nretained size summed by constructor of objects whose dominator has another constructor (top 30):');
{
  const sums = new Map<string, { r: number; n: number }>();
  for (let i = 1; i < count; i++) {
    if (order[i]! < 0) continue;
    const d = dominator(i);
    const k = `${typeOf(i)} ${nameOf(i).slice(0, 60)}`;
    if (`${typeOf(d)} ${nameOf(d).slice(0, 60)}` === k) continue;
    const s = sums.get(k) ?? { r: 0, n: 0 };
    s.r += retained[i]!;
    s.n++;
    sums.set(k, s);
  }
  for (const [k, s] of [...sums].sort((a, b) => b[1].r - a[1].r).slice(0, 30)) console.log(`${mb(s.r)} MB  ${String(s.n).padStart(8)}  ${k}`);
}

// Attribution by first reach: walk the data below each known root in turn (not into
// closures, contexts, code or another root's instance) and charge each object to the
// first root that reaches it: shared objects (a stored Ingress read by the translator's
// memo) count once, under the earlier root.
console.log('\nself size reachable from each root, in order, not counting what an earlier root reached:');
{
  const taken = new Uint8Array(count);
  const rootSet = new Set(roots);
  const isBarrier = (i: number) => {
    const t = typeOf(i);
    return t === 'closure' || t === 'code' || t === 'native' || (t === 'object' && (rootSet.has(nameOf(i)) || nameOf(i).startsWith('system /')));
  };
  for (const root of roots) {
    const starts: number[] = [];
    for (let i = 0; i < count; i++) if (order[i]! >= 0 && typeOf(i) === 'object' && nameOf(i) === root) starts.push(i);
    if (starts.length === 0) continue;
    const byEdge = new Map<string, number>();
    let total = 0;
    for (const s of starts) {
      for (let e = firstEdge[s]!; e < firstEdge[s + 1]!; e += EF) {
        if (!retains(e)) continue;
        const first = edges[e + eTo]! / NF;
        if (taken[first] || isBarrier(first)) continue;
        const stack = [first];
        taken[first] = 1;
        let sum = 0;
        while (stack.length > 0) {
          const v = stack.pop()!;
          sum += selfSize(v);
          for (let f = firstEdge[v]!; f < firstEdge[v + 1]!; f += EF) {
            if (!retains(f)) continue;
            const w = edges[f + eTo]! / NF;
            if (taken[w] || isBarrier(w)) continue;
            taken[w] = 1;
            stack.push(w);
          }
        }
        const k = edgeName(e);
        byEdge.set(k, (byEdge.get(k) ?? 0) + sum);
        total += sum;
      }
    }
    console.log(`${mb(total)} MB  ${root}: ${[...byEdge].sort((a, b) => b[1] - a[1]).slice(0, 6).map(([k, v]) => `.${k} ${(v / 1e6).toFixed(1)}`).join(', ')}`);
  }
}

// DUMP=Name[,depth]: the object tree of one instance of Name (self sizes; each object once).
if (process.env.DUMP) {
  const [name, depthText] = process.env.DUMP.split(',');
  const maxDepth = Number(depthText ?? 4);
  let start = -1;
  for (let i = 0; i < count && start < 0; i++) if (order[i]! >= 0 && typeOf(i) === 'object' && nameOf(i) === name) start = i;
  const seen = new Set<number>();
  const walk = (v: number, depth: number, indent: string) => {
    for (let e = firstEdge[v]!; e < firstEdge[v + 1]!; e += EF) {
      if (!retains(e) || edges[e + eType] === HIDDEN) continue;
      const w = edges[e + eTo]! / NF;
      const t = typeOf(w);
      if (t === 'code' || t === 'hidden' || t === 'object shape' || edgeName(e) === 'map' || edgeName(e) === '__proto__') continue;
      const again = seen.has(w);
      seen.add(w);
      const label = t.includes('string') ? JSON.stringify(nameOf(w).slice(0, 50)) : `${t} ${nameOf(w).slice(0, 40)}`;
      console.log(`${indent}.${edgeName(e)}: ${label} self ${selfSize(w)} retained ${retained[w]}${again ? ' (seen)' : ''}`);
      if (!again && depth < maxDepth && !t.includes('string')) walk(w, depth + 1, indent + '  ');
    }
  };
  console.log(`\none ${name}:`);
  if (start >= 0) walk(start, 0, '  ');
}

// Retained size by owner and property, over all instances: "Forwarder.bound 3.2 MB"
// (objects each dominated by the object that points to them). Element indexes and Map
// table slots are folded into [] so that one Map's entries sum up.
// ONLY_TYPE="concatenated string": only children of that node type (which owners hold the string trees).
const onlyType = process.env.ONLY_TYPE;
console.log(`\nretained size by owner constructor and property (dominated children only${onlyType ? `, ${onlyType} only` : ''}), top 50:`);
{
  const sums = new Map<string, { r: number; n: number }>();
  for (let v = 0; v < count; v++) {
    if (order[v]! < 0) continue;
    const t = typeOf(v);
    if (t !== 'object' && t !== 'closure') continue;
    const owner = nameOf(v).slice(0, 40);
    for (let e = firstEdge[v]!; e < firstEdge[v + 1]!; e += EF) {
      if (!retains(e)) continue;
      const to = edges[e + eTo]! / NF;
      if (order[to]! < 0 || dominator(to) !== v) continue;
      if (onlyType !== undefined && typeOf(to) !== onlyType) continue;
      const et = edges[e + eType];
      const prop = et === ELEMENT || et === HIDDEN || /^\d+$/.test(edgeName(e)) ? '[]' : edgeName(e);
      const k = `${owner}.${prop}`;
      const s = sums.get(k) ?? { r: 0, n: 0 };
      s.r += retained[to]!;
      s.n++;
      sums.set(k, s);
    }
  }
  for (const [k, s] of [...sums].sort((a, b) => b[1].r - a[1].r).slice(0, 50)) console.log(`${mb(s.r)} MB  ${String(s.n).padStart(8)}  ${k}`);
}

// Slack in arrays: backing stores larger than their elements (push() grows by half plus
// 16), by the property that holds the array: "Object.routes 1.2 MB in 10,000 arrays".
if (process.env.SLACK) {
  const sums = new Map<string, { slack: number; n: number }>();
  for (let v = 0; v < count; v++) {
    if (order[v]! < 0 || typeOf(v) !== 'object') continue;
    const owner = nameOf(v).slice(0, 40);
    for (let e = firstEdge[v]!; e < firstEdge[v + 1]!; e += EF) {
      const arr = edges[e + eTo]! / NF;
      if (typeOf(arr) !== 'object' || nameOf(arr) !== 'Array') continue;
      for (let f = firstEdge[arr]!; f < firstEdge[arr + 1]!; f += EF) {
        if (edgeName(f) !== 'elements') continue;
        const store = edges[f + eTo]! / NF;
        let elements = 0;
        for (let g = firstEdge[store]!; g < firstEdge[store + 1]!; g += EF) if (edges[g + eType] === ELEMENT || edges[g + eType] === HIDDEN) elements++;
        const slack = selfSize(store) - 16 - 8 * elements;
        if (slack <= 0) continue;
        const k = `${owner}.${/^\d+$/.test(edgeName(e)) ? '[]' : edgeName(e)}`;
        const s = sums.get(k) ?? { slack: 0, n: 0 };
        s.slack += slack;
        s.n++;
        sums.set(k, s);
      }
    }
  }
  console.log('\narray slack (capacity beyond the elements) by holder, top 20:');
  for (const [k, s] of [...sums].sort((a, b) => b[1].slack - a[1].slack).slice(0, 20)) console.log(`${mb(s.slack)} MB  ${String(s.n).padStart(8)}  ${k}`);
}
