// A renderer for the subset of Helm's Go templates that deploy/helm/portico uses, so
// the static install manifest (deploy/portico.yaml) can be rendered from the chart on
// machines without a helm binary, and checked in CI to be current. It is not a general
// Helm: an action or function outside the subset is an error naming it, never a guess.
// `helm template portico deploy/helm/portico -n portico` renders the same objects.
//
// Supported: {{ }} with {{- -}} trimming, {{/* comments */}}, define / include, if /
// else if / else, with, `$var := pipeline`, pipelines with |, parenthesised
// sub-pipelines, .Values / .Release / .Chart fields, and the functions in FUNCTIONS.
import { stringify } from 'yaml';

type Value = unknown;
export interface Scope {
  readonly dot: Value;
  readonly root: Value;
  readonly vars: Map<string, Value>;
}

interface TextNode { kind: 'text'; text: string }
interface OutputNode { kind: 'output'; pipeline: string }
interface AssignNode { kind: 'assign'; name: string; pipeline: string }
interface IfNode { kind: 'if' | 'with'; branches: { pipeline: string | undefined; body: Node[] }[] }
type Node = TextNode | OutputNode | AssignNode | IfNode;

/** Splits a template into text and actions, applying the {{- and -}} whitespace trims. */
function tokenize(source: string): ({ text: string } | { action: string })[] {
  const out: ({ text: string } | { action: string })[] = [];
  let at = 0;
  let trimNext = false;
  while (at < source.length) {
    const open = source.indexOf('{{', at);
    let text = open === -1 ? source.slice(at) : source.slice(at, open);
    if (trimNext) text = text.replace(/^\s+/, '');
    if (open === -1) {
      out.push({ text });
      break;
    }
    const close = source.indexOf('}}', open);
    if (close === -1) throw new Error(`unclosed action at offset ${open}`);
    let inner = source.slice(open + 2, close);
    if (inner.startsWith('-')) {
      text = text.replace(/\s+$/, '');
      inner = inner.slice(1);
    }
    trimNext = inner.endsWith('-');
    if (trimNext) inner = inner.slice(0, -1);
    out.push({ text });
    inner = inner.trim();
    if (!(inner.startsWith('/*') && inner.endsWith('*/'))) out.push({ action: inner });
    at = close + 2;
  }
  return out;
}

/** Parses tokens into nodes; `defines` collects {{ define }} blocks. */
function parse(tokens: ({ text: string } | { action: string })[], defines: Map<string, Node[]>): Node[] {
  let i = 0;
  const block = (): { nodes: Node[]; stop: string } => {
    const nodes: Node[] = [];
    while (i < tokens.length) {
      const token = tokens[i++]!;
      if ('text' in token) {
        if (token.text !== '') nodes.push({ kind: 'text', text: token.text });
        continue;
      }
      const action = token.action;
      const word = action.split(/\s+/)[0]!;
      if (word === 'end' || word === 'else') return { nodes, stop: action };
      if (word === 'define') {
        const name = JSON.parse(action.slice(6).trim()) as string;
        defines.set(name, block().nodes);
        continue;
      }
      if (word === 'if' || word === 'with') {
        const node: IfNode = { kind: word, branches: [] };
        let pipeline: string | undefined = action.slice(word.length).trim();
        for (;;) {
          const { nodes: body, stop } = block();
          node.branches.push({ pipeline, body });
          if (stop === 'end') break;
          if (stop === 'else') pipeline = undefined;
          else if (stop.startsWith('else if ')) pipeline = stop.slice(8).trim();
          else throw new Error(`unexpected {{ ${stop} }}`);
        }
        nodes.push(node);
        continue;
      }
      const assign = /^\$(\w+)\s*:=\s*(.+)$/.exec(action);
      if (assign) nodes.push({ kind: 'assign', name: assign[1]!, pipeline: assign[2]! });
      else if (/^(range|template|block)\b/.test(action)) throw new Error(`{{ ${word} }} is not supported by this renderer`);
      else nodes.push({ kind: 'output', pipeline: action });
    }
    return { nodes, stop: '' };
  };
  return block().nodes;
}

/** Go template truthiness: false, 0, nil and empty strings, lists and maps are false. */
function truthy(v: Value): boolean {
  if (v === undefined || v === null || v === false || v === 0 || v === '') return false;
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === 'object') return Object.keys(v as object).length > 0;
  return true;
}

function indentLines(n: number, s: string): string {
  const pad = ' '.repeat(n);
  return s.split('\n').map((line) => pad + line).join('\n');
}

type Fn = (args: Value[], renderer: Renderer, scope: Scope) => Value;
const FUNCTIONS: Record<string, Fn> = {
  include: ([name, data], r) => r.include(String(name), data),
  nindent: ([n, s]) => '\n' + indentLines(Number(n), String(s)),
  indent: ([n, s]) => indentLines(Number(n), String(s)),
  // Helm's toYaml: no trailing newline.
  toYaml: ([v]) => (v === undefined || v === null ? 'null' : stringify(v, { lineWidth: 0 }).replace(/\n$/, '')),
  default: ([fallback, v]) => (truthy(v) ? v : fallback),
  trunc: ([n, s]) => String(s).slice(0, Number(n)),
  trimSuffix: ([suffix, s]) => (String(s).endsWith(String(suffix)) ? String(s).slice(0, -String(suffix).length) : String(s)),
  printf: ([format, ...args]) => {
    let k = 0;
    return String(format).replace(/%[sdv]/g, () => String(args[k++]));
  },
  replace: ([from, to, s]) => String(s).replaceAll(String(from), String(to)),
  contains: ([sub, s]) => String(s).includes(String(sub)),
  quote: ([s]) => JSON.stringify(String(s ?? '')),
  add: (args) => args.reduce((a: number, b) => a + Number(b), 0),
  int: ([v]) => Math.trunc(Number(v)),
  eq: ([a, b]) => a === b,
  ne: ([a, b]) => a !== b,
  gt: ([a, b]) => Number(a) > Number(b),
  not: ([v]) => !truthy(v),
  and: (args) => args.find((a) => !truthy(a)) ?? args[args.length - 1],
  or: (args) => args.find((a) => truthy(a)) ?? args[args.length - 1],
};

/** Splits on `sep` outside strings and parentheses. */
function splitTop(text: string, sep: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quoted = false;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '\\') i++;
      else if (c === '"') quoted = false;
    } else if (c === '"') quoted = true;
    else if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (depth === 0 && (sep === ' ' ? /\s/.test(c) : c === sep)) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts.map((p) => p.trim()).filter((p) => p !== '');
}

export class Renderer {
  private readonly defines = new Map<string, Node[]>();

  /** Reads the define blocks of a helpers file. */
  addHelpers(source: string): void {
    parse(tokenize(source), this.defines);
  }

  render(source: string, root: Value): string {
    const nodes = parse(tokenize(source), this.defines);
    return this.run(nodes, { dot: root, root, vars: new Map() });
  }

  include(name: string, data: Value): string {
    const body = this.defines.get(name);
    if (!body) throw new Error(`include: no template named ${JSON.stringify(name)}`);
    return this.run(body, { dot: data, root: data, vars: new Map() });
  }

  private run(nodes: Node[], scope: Scope): string {
    let out = '';
    for (const node of nodes) {
      switch (node.kind) {
        case 'text':
          out += node.text;
          break;
        case 'output': {
          const v = this.pipeline(node.pipeline, scope);
          out += v === undefined || v === null ? '' : String(v);
          break;
        }
        case 'assign':
          scope.vars.set(node.name, this.pipeline(node.pipeline, scope));
          break;
        case 'if':
        case 'with':
          for (const branch of node.branches) {
            const v = branch.pipeline === undefined ? true : this.pipeline(branch.pipeline, scope);
            if (!truthy(v)) continue;
            const inner = node.kind === 'with' && branch.pipeline !== undefined ? { ...scope, dot: v } : scope;
            out += this.run(branch.body, inner);
            break;
          }
          break;
      }
    }
    return out;
  }

  private pipeline(text: string, scope: Scope): Value {
    let value: Value = undefined;
    let first = true;
    for (const command of splitTop(text, '|')) {
      const words = splitTop(command, ' ');
      const head = words[0]!;
      const fn = FUNCTIONS[head];
      if (fn) {
        const args = words.slice(1).map((w) => this.term(w, scope));
        if (!first) args.push(value);
        value = fn(args, this, scope);
      } else {
        if (/^[a-z]\w*$/.test(head)) throw new Error(`function ${JSON.stringify(head)} is not supported by this renderer`);
        if (words.length !== 1 || !first) throw new Error(`cannot evaluate ${JSON.stringify(command)}`);
        value = this.term(head, scope);
      }
      first = false;
    }
    return value;
  }

  private term(word: string, scope: Scope): Value {
    if (word.startsWith('(') && word.endsWith(')')) return this.pipeline(word.slice(1, -1), scope);
    if (word.startsWith('"')) return JSON.parse(word) as string;
    if (/^-?\d+(\.\d+)?$/.test(word)) return Number(word);
    if (word === 'true' || word === 'false') return word === 'true';
    if (word === '.') return scope.dot;
    if (word.startsWith('$')) {
      const [name, ...path] = word.slice(1).split('.');
      const base = name === '' ? scope.root : scope.vars.get(name!);
      return path.reduce((v: Value, key) => (v as Record<string, Value> | undefined)?.[key], base);
    }
    if (word.startsWith('.')) return word.slice(1).split('.').reduce((v: Value, key) => (v as Record<string, Value> | undefined)?.[key], scope.dot);
    throw new Error(`cannot evaluate ${JSON.stringify(word)}`);
  }
}
