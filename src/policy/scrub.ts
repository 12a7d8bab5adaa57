/*
 * The scrubber: replaces known secret VALUES with `[secret:NAME]`, whatever
 * key they sit under (redact.ts is the other half: it hides values by key name).
 *
 *   secretSnapshot() (util/secret-values.ts: every stored secret, model key,
 *   resolved env_refs value, literal env value, gateway token)
 *     ─► values of at least secrets.scrub_min_chars, plus their hex and base64
 *        forms ─► one Aho–Corasick automaton, rebuilt only when the set changes
 *     ─► scrub(text): one left-to-right pass; every character covered by any
 *        occurrence is replaced (overlapping secrets cannot leave a piece behind)
 *
 * Bounded: a pass reads at most secrets.scrub_max_chars; a longer text is cut
 * there (never passed on unscrubbed) with a note of how much was withheld.
 * ScrubStream carries the tail that could still become a secret across chunks,
 * so a value split between two reads of a pipe is still caught.
 */
import type { Limits } from '../../gen/types/limits.js';
import { secretSnapshot } from '../util/secret-values.js';
import { shippedPolicy } from './load.js';

interface Pattern {
  readonly text: string;
  readonly name: string;
}

class Automaton {
  readonly next: Array<Map<number, number>> = [new Map()];
  readonly fail: number[] = [0];
  /** The pattern ending exactly at this node, or -1. */
  readonly term: number[] = [-1];
  /** The nearest node on the fail chain that ends a pattern, or -1. */
  readonly dict: number[] = [-1];
  readonly depth: number[] = [0];
  /** The root's transitions as a flat table: most text never leaves the root, so this is the hot path. */
  readonly root = new Int32Array(65536);
  /** Per node: the first pattern-ending node on its output chain (itself or dict), or -1; one read per character. */
  out: Int32Array = new Int32Array(0);
  /** The shortest pattern's length: a text shorter than this holds no secret (most keys and small values). */
  readonly shortest: number;

  constructor(readonly patterns: readonly Pattern[]) {
    this.shortest = patterns.reduce((m, p) => Math.min(m, p.text.length), Number.POSITIVE_INFINITY);
    patterns.forEach((p, i) => {
      let s = 0;
      for (let k = 0; k < p.text.length; k++) {
        const c = p.text.charCodeAt(k);
        let n = this.next[s]!.get(c);
        if (n === undefined) {
          n = this.next.length;
          this.next.push(new Map());
          this.fail.push(0);
          this.term.push(-1);
          this.dict.push(-1);
          this.depth.push(this.depth[s]! + 1);
          this.next[s]!.set(c, n);
        }
        s = n;
      }
      this.term[s] = i;
    });
    const queue: number[] = [];
    for (const [c, n] of this.next[0]!) {
      this.root[c] = n;
      queue.push(n);
    }
    for (let q = 0; q < queue.length; q++) {
      const s = queue[q]!;
      for (const [c, n] of this.next[s]!) {
        let f = this.fail[s]!;
        while (f !== 0 && !this.next[f]!.has(c)) f = this.fail[f]!;
        const to = this.next[f]!.get(c);
        this.fail[n] = to !== undefined && to !== n ? to : 0;
        const fn = this.fail[n]!;
        this.dict[n] = this.term[fn]! >= 0 ? fn : this.dict[fn]!;
        queue.push(n);
      }
    }
    this.out = Int32Array.from(this.term, (t, node) => (t >= 0 ? node : this.dict[node]!));
  }

  step(s: number, c: number): number {
    while (s !== 0) {
      const n = this.next[s]!.get(c);
      if (n !== undefined) return n;
      s = this.fail[s]!;
    }
    return this.root[c]!;
  }
}

let cache: { key: string; min: number; auto: Automaton | null } | undefined;

/**
 * The policy's bounds. When the policy itself cannot be loaded (the error being reported may
 * be that one), every known value is matched whatever its length and no text is cut short:
 * scrubbing too much of an error message is the safe side.
 */
function limits(): { min: number; max: number } {
  let l: Limits['secrets'];
  try {
    l = shippedPolicy().limits.secrets;
  } catch {
    return { min: 1, max: Number.POSITIVE_INFINITY };
  }
  return { min: l.scrub_min_chars, max: l.scrub_max_chars };
}

/** The forms a value may be shown in: itself, hex, and the base64 of its bytes at each of the three alignments. */
function forms(value: string, min: number): string[] {
  const out = [value];
  const bytes = Buffer.from(value, 'utf8');
  const hex = bytes.toString('hex');
  out.push(hex, hex.toUpperCase());
  for (let k = 0; k < 3; k++) {
    // Only the groups made wholly of the value's bytes are fixed; the edge characters depend on what surrounds it.
    const first = Math.ceil(k / 3);
    const last = Math.floor((k + bytes.length) / 3);
    const core = Buffer.concat([Buffer.alloc(k), bytes]).toString('base64').slice(first * 4, last * 4);
    if (core.length < min) continue;
    out.push(core);
    const url = core.replace(/\+/g, '-').replace(/\//g, '_');
    if (url !== core) out.push(url);
  }
  return out;
}

function matcher(): Automaton | null {
  const snap = secretSnapshot();
  const { min } = limits();
  if (cache?.key === snap.key && cache.min === min) return cache.auto;
  const byText = new Map<string, string>();
  for (const [name, value] of snap.entries()) {
    if (value.length < min) continue;
    for (const f of forms(value, min)) if (!byText.has(f)) byText.set(f, f === value ? name : `${name}:encoded`);
  }
  // A raw value wins its name over an encoded form that happens to be the same text.
  for (const [name, value] of snap.entries()) if (value.length >= min) byText.set(value, name);
  const auto = byText.size ? new Automaton([...byText].map(([text, name]) => ({ text, name }))) : null;
  cache = { key: snap.key, min, auto };
  return auto;
}

/**
 * One pass over text. Returns the scrubbed text up to `cut` and where that is:
 * with final=false, the tail that is still the start of some secret (or inside
 * one that runs past it) is left for the next chunk.
 */
function pass(auto: Automaton, text: string, final: boolean): { out: string; cut: number } {
  const n = text.length;
  // reach[i] = the last index covered by a secret starting at i (or -1); who[i] = its pattern.
  // Allocated at the first match: most text holds none.
  let reach: Int32Array | null = null;
  let who: Int32Array | null = null;
  const { root, out: first } = auto;
  let s = 0;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    s = s === 0 ? root[c]! : auto.step(s, c);
    for (let o = first[s]!; o >= 0; o = auto.dict[o]!) {
      const p = auto.term[o]!;
      const start = i - auto.patterns[p]!.text.length + 1;
      if (!reach || !who) {
        reach = new Int32Array(n).fill(-1);
        who = new Int32Array(n);
      }
      if (reach[start]! < i) {
        reach[start] = i;
        who[start] = p;
      }
    }
  }
  let cut = final ? n : n - auto.depth[s]!;
  if (!reach || !who) return { out: text.slice(0, cut), cut };
  let out = '';
  let i = 0;
  let plain = 0;
  while (i < cut) {
    if (reach[i]! < 0) {
      i++;
      continue;
    }
    let end = reach[i]!;
    const names = [auto.patterns[who[i]!]!.name];
    for (let j = i + 1; j <= end; j++) {
      if (reach[j]! > end) {
        end = reach[j]!;
        const nm = auto.patterns[who[j]!]!.name;
        if (!names.includes(nm)) names.push(nm);
      }
    }
    if (!final && end >= cut) {
      // A secret that runs into the held tail: hold it all, so no piece of it goes out.
      cut = i;
      break;
    }
    out += text.slice(plain, i) + `[secret:${names.join('+')}]`;
    i = end + 1;
    plain = i;
  }
  return { out: out + text.slice(plain, Math.max(plain, cut)), cut: Math.max(plain, cut) };
}

function withheld(n: number): string {
  return `…[${n} more characters withheld: past the scrubber's bound (secrets.scrub_max_chars)]`;
}

/**
 * The text with every known secret value (and its hex/base64 form) replaced by [secret:NAME].
 * The bound is the shipped policy's unless a loaded policy's secrets limits are given.
 */
export function scrub(text: string, secrets?: Limits['secrets']): string {
  return scrubWith(matcher(), secrets?.scrub_max_chars ?? limits().max, text);
}

function scrubWith(auto: Automaton | null, max: number, text: string): string {
  if (text.length > max) {
    if (!auto) return text.slice(0, max) + withheld(text.length - max);
    const r = pass(auto, text.slice(0, max), false);
    return r.out + withheld(text.length - r.cut);
  }
  if (!auto || text.length < auto.shortest) return text;
  return pass(auto, text, true).out;
}

/**
 * Whether text holds any known secret value (or its hex/base64 form): one pass that stops at
 * the first match, for a caller that must keep such text out of a store rather than rewrite it.
 */
export function holdsSecret(text: string): boolean {
  const auto = matcher();
  if (!auto) return false;
  let s = 0;
  for (let i = 0; i < text.length; i++) {
    s = auto.step(s, text.charCodeAt(i));
    if (auto.term[s]! >= 0 || auto.dict[s]! >= 0) return true;
  }
  return false;
}

/** A scrub function bound to the current matcher, for a caller that scrubs many strings at once. */
export function scrubber(): (text: string) => string {
  const auto = matcher();
  const { max } = limits();
  return (text) => scrubWith(auto, max, text);
}

const DEPTH = 64;

/**
 * The value with every string (object keys too) scrubbed; one matcher for the whole walk.
 * Copy on write: a part with nothing to replace is the same object, so an answer without a
 * secret in it costs a read, not a copy. Anything past DEPTH levels becomes '[nested]'.
 */
export function scrubDeep<T>(value: T): T {
  const auto = matcher();
  if (!auto) return value;
  const { max } = limits();
  const walk = (v: unknown, d: number): unknown => {
    if (typeof v === 'string') return scrubWith(auto, max, v);
    if (v === null || typeof v !== 'object') return v;
    if (d >= DEPTH) return '[nested]';
    if (Array.isArray(v)) {
      let copy: unknown[] | undefined;
      for (let i = 0; i < v.length; i++) {
        const x = walk(v[i], d + 1);
        if (x !== v[i] && !copy) copy = v.slice(0, i);
        copy?.push(x);
      }
      return copy ?? v;
    }
    const proto = Object.getPrototypeOf(v);
    // Only plain objects are kept as they are: anything else becomes a plain copy of its own fields, as before.
    let out: Record<string, unknown> | undefined = proto === Object.prototype || proto === null ? undefined : {};
    const entries = Object.entries(v as Record<string, unknown>);
    for (let i = 0; i < entries.length; i++) {
      const [k, x] = entries[i]!;
      const key = scrubWith(auto, max, k);
      const val = walk(x, d + 1);
      if (!out && (key !== k || val !== x)) {
        out = {};
        for (let j = 0; j < i; j++) out[entries[j]![0]] = entries[j]![1];
      }
      if (out) out[key] = val;
    }
    return out ?? v;
  };
  return walk(value, 0) as T;
}

/**
 * Scrubs a stream of text chunks (a command's stdout): push() returns what can
 * safely go out now; end() the rest. The tail held back is at most one secret long.
 */
export class ScrubStream {
  private held = '';

  push(chunk: string): string {
    const auto = matcher();
    const text = this.held + chunk;
    if (!auto) {
      this.held = '';
      return text;
    }
    const { max } = limits();
    let out = '';
    let rest = text;
    for (;;) {
      const r = pass(auto, rest.slice(0, max), false);
      if (rest.length <= max) {
        this.held = rest.slice(r.cut);
        return out + r.out;
      }
      // A window that is wholly the start of one secret cannot move on: it is withheld, never passed.
      if (r.cut === 0) {
        out += withheld(max);
        rest = rest.slice(max);
      } else {
        out += r.out;
        rest = rest.slice(r.cut);
      }
    }
  }

  end(): string {
    const rest = this.held;
    this.held = '';
    return scrub(rest);
  }
}
