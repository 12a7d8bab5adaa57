/*
 * Start-up: compile the bundles with a V8 code cache, so a launch does not parse and
 * compile megabytes of JavaScript from scratch.
 *
 *   bin/shadowcode.js ─► boot() ─► read dist/cli.cjs
 *     ─► cache file for (bundle hash, node version, arch) in the per-user cache dir
 *        ($XDG_CACHE_HOME/shadowcode or ~/.cache/shadowcode; never the install dir, which may be read-only)
 *     ─► vm.Script(source, cachedData) (the build wrote it inside the module wrapper) ─► run it
 *        as a CommonJS module ─► exports.run()
 *     ─► no cache or V8 rejected it ─► write a fresh one once the process has warmed up
 *   dist/cli.cjs requires an MCP SDK or yaml (src/vendor.ts) and first uses it
 *     ─► dist/vendor.cjs, compiled the same way with its own cache file ─► that package
 *
 * The cache is only an accelerator: any failure to read, trust or write it falls
 * back to compiling normally, and V8 itself rejects data that does not match the
 * source or the engine. Writes are atomic (temp file + rename) and length-framed,
 * so a torn file is discarded rather than fed to V8.
 *
 * The bundle's require() loads the vendored packages and a few heavy built-ins (LAZY)
 * only when one of their members is first used, not when a module that imports them
 * starts: `mcp serve` gives its first answers, and `--version` or `--help` runs, without them.
 */
import { closeSync, fsyncSync, openSync, readdirSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import * as nodeModule from 'node:module';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { constants as vmConstants, Script } from 'node:vm';
import { makeDirs } from './util/make-dirs.js';
import { V8_FLAGS } from './v8-flags.js';

declare const __SHADOWCODE_BUNDLE_HASH__: string;
/** dist/vendor.cjs: its hash (its cache key) and the packages it serves to dist/cli.cjs (scripts/build.mjs). */
declare const __SHADOWCODE_VENDOR__: { readonly hash: string; readonly ids: readonly string[] };

const MAGIC = 'scv8';
/** What CommonJS's module wrapper puts before a module's text. */
const WRAP_HEAD = nodeModule.Module.wrap('\0').split('\0')[0]!;
/** How long after start-up the cache is written (by then tools/list and the first calls have compiled). */
const SAVE_AFTER_MS = 1500;

interface Cli {
  run(): Promise<void>;
}

function cacheDir(): string | undefined {
  const xdg = process.env.XDG_CACHE_HOME;
  if (xdg && isAbsolute(xdg)) return join(xdg, 'shadowcode');
  try {
    const home = process.env.HOME || homedir();
    return home ? join(home, '.cache', 'shadowcode') : undefined;
  } catch {
    return undefined;
  }
}

interface Cached {
  readonly data: Buffer;
  /** Written after a warm-up (a server past its first requests), not at the exit of a short command. */
  readonly warm: boolean;
}

// File layout: "scv8", u32 data length, u32 flags (1 = warm), data.
/** The cached data, or undefined when it is missing, torn or not ours. */
function readCache(file: string): Cached | undefined {
  try {
    const raw = readFileSync(file);
    if (raw.length < 12 || raw.toString('latin1', 0, 4) !== MAGIC) return undefined;
    if (raw.readUInt32LE(4) !== raw.length - 12) return undefined;
    return { data: raw.subarray(12), warm: (raw.readUInt32LE(8) & 1) === 1 };
  } catch {
    return undefined;
  }
}

function writeCache(dir: string, file: string, name: string, data: Buffer, warm: boolean): void {
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    makeDirs(dir, 0o700);
    const head = Buffer.alloc(12);
    head.write(MAGIC, 0, 'latin1');
    head.writeUInt32LE(data.length, 4);
    head.writeUInt32LE(warm ? 1 : 0, 8);
    const fd = openSync(tmp, 'wx', 0o600);
    try {
      writeSync(fd, head);
      writeSync(fd, data);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, file);
    // Caches of other builds or Node versions are never read again.
    const mine = file.slice(dir.length + 1);
    for (const other of readdirSync(dir)) {
      if (other.startsWith(`${name}-`) && other.endsWith('.v8') && other !== mine) rmSync(join(dir, other), { force: true });
    }
  } catch {
    rmSync(tmp, { force: true });
  }
}

/**
 * Built-ins the bundle imports in modules most launches start but seldom call (a process is
 * spawned on a tool call, not before the first answer; HTTP and DNS serve the network proxy of
 * a job, the HTTP transport, the console and telemetry, none of which a stdio session or a
 * plain command starts). The bundle reads their members at each use (`(0, mod.spawn)(…)`), so
 * a stand-in that loads the module on first access is the module to it. (A default import,
 * `__toESM(require(…))`, reads them all when its module starts: no gain there, no harm.)
 */
const LAZY: ReadonlySet<string> = new Set(['node:child_process', 'child_process', 'node:http', 'node:https', 'node:dns', 'node:dns/promises']);

function lazyModule(load: () => object): object {
  let mod: object | undefined;
  const real = () => (mod ??= load());
  return new Proxy(Object.create(null) as object, {
    get: (_t, k) => Reflect.get(real(), k),
    set: (_t, k, v) => Reflect.set(real(), k, v),
    has: (_t, k) => Reflect.has(real(), k),
    ownKeys: () => Reflect.ownKeys(real()),
    // Reported configurable: the stand-in itself holds no property that could contradict it.
    getOwnPropertyDescriptor: (_t, k) => {
      const d = Reflect.getOwnPropertyDescriptor(real(), k);
      return d && { ...d, configurable: true };
    },
    getPrototypeOf: () => Reflect.getPrototypeOf(real()),
  });
}

/**
 * The bundle's require: the real one, except that LAZY built-ins, and the packages `vendor`
 * serves, load on first use. One stand-in per id, so every module of the bundle shares it.
 */
export function bundleRequire(real: NodeJS.Require, vendor?: { ids: readonly string[]; load: (id: string) => object }): NodeJS.Require {
  const made = new Map<string, object>();
  const req = ((id: string) => {
    const served = vendor?.ids.includes(id) === true;
    if (!served && !LAZY.has(id)) return real(id);
    let m = made.get(id);
    if (!m) made.set(id, (m = lazyModule(() => (served ? vendor!.load(id) : (real(id) as object)))));
    return m;
  }) as NodeJS.Require;
  return Object.assign(req, { resolve: real.resolve, cache: real.cache, main: real.main, extensions: real.extensions });
}

/**
 * Compiles one of our bundles from its V8 code cache (`name-HASH-NODE-ARCH.v8` in the cache
 * directory) and runs it as a CommonJS module; returns its exports.
 */
function runCached<T>(dir: string | undefined, name: string, hash: string, requireFor: (bundle: string) => NodeJS.Require): T {
  const bundle = join(__dirname, `${name}.cjs`);
  // The build keeps the bundles ASCII (scripts/build.mjs checks), so Latin-1 reads them exactly, in a
  // tenth of the time UTF-8 decoding takes: every command starts here.
  const source = readFileSync(bundle).toString('latin1');
  const file = dir ? join(dir, `${name}-${hash}-${process.version}-${process.arch}.v8`) : undefined;
  const cached = file ? readCache(file) : undefined;
  const cachedData = cached?.data;
  const dynamicImport = (vmConstants as unknown as { USE_MAIN_CONTEXT_DEFAULT_LOADER?: symbol }).USE_MAIN_CONTEXT_DEFAULT_LOADER;
  const options = { filename: bundle, ...(dynamicImport ? { importModuleDynamically: dynamicImport as never } : {}) };
  // The build writes the bundle inside the module wrapper (scripts/build.mjs): wrapped here, the
  // text would be copied once more into a flat string before V8 compiles it.
  const code = source.startsWith(WRAP_HEAD) ? source : nodeModule.Module.wrap(source);
  let script: Script;
  try {
    script = new Script(code, { ...options, cachedData });
  } catch {
    script = new Script(code, options);
  }
  const usable = cached !== undefined && !script.cachedDataRejected;
  if (dir && file && !(usable && cached.warm)) {
    // A cache from a short command holds little beyond the top level: a process that warms up replaces it once.
    let saved = false;
    const save = (warm: boolean) => {
      if (saved) return;
      saved = true;
      try {
        writeCache(dir, file, name, script.createCachedData(), warm);
      } catch {
        // an accelerator only
      }
    };
    setTimeout(() => save(true), SAVE_AFTER_MS).unref();
    if (!usable) process.once('exit', () => save(false));
  }
  const mod = { exports: {} as T };
  const fn = script.runInThisContext() as (exports: unknown, require: NodeJS.Require, module: unknown, filename: string, dirname: string) => void;
  fn.call(mod.exports, mod.exports, requireFor(bundle), mod, bundle, dirname(bundle));
  return mod.exports;
}

export function boot(): Cli {
  const dir = cacheDir();
  // Node ≥ 22 can cache what its own loader compiles (better-sqlite3's JavaScript); a no-op before.
  const enable = (nodeModule as { enableCompileCache?: (d: string) => unknown }).enableCompileCache;
  if (dir && enable) {
    try {
      enable(join(dir, 'node'));
    } catch {
      // an accelerator only
    }
  }
  // Before the compile: V8 refuses a code cache made under other flags, and the bundle sets these
  // when it runs, so a cache saved after that only matches a compile that had them too.
  for (const flag of V8_FLAGS) setFlagsFromString(flag);
  let vendor: Record<string, () => object> | undefined;
  const load = (id: string) => {
    vendor ??= runCached<{ VENDOR: Record<string, () => object> }>(dir, 'vendor', __SHADOWCODE_VENDOR__.hash, (b) => nodeModule.createRequire(b)).VENDOR;
    return vendor[id]!();
  };
  return runCached<Cli>(dir, 'cli', __SHADOWCODE_BUNDLE_HASH__, (b) => bundleRequire(nodeModule.createRequire(b), { ids: __SHADOWCODE_VENDOR__.ids, load }));
}
