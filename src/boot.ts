/*
 * Start-up: compile the one-file bundle (dist/cli.cjs) with a V8 code cache, so
 * a launch does not parse and compile ~2 MB of JavaScript from scratch.
 *
 *   bin/shadowcode.js ─► boot() ─► read dist/cli.cjs
 *     ─► cache file for (bundle hash, node version, arch) in the per-user cache dir
 *        ($XDG_CACHE_HOME/shadowcode or ~/.cache/shadowcode; never the install dir, which may be read-only)
 *     ─► vm.Script(source, cachedData) ─► run it as a CommonJS module ─► exports.run()
 *     ─► no cache or V8 rejected it ─► write a fresh one once the process has warmed up
 *
 * The cache is only an accelerator: any failure to read, trust or write it falls
 * back to compiling normally, and V8 itself rejects data that does not match the
 * source or the engine. Writes are atomic (temp file + rename) and length-framed,
 * so a torn file is discarded rather than fed to V8.
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

const MAGIC = 'scv8';
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

function writeCache(dir: string, file: string, data: Buffer, warm: boolean): void {
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
    for (const name of readdirSync(dir)) {
      if (name.startsWith('cli-') && name.endsWith('.v8') && name !== mine) rmSync(join(dir, name), { force: true });
    }
  } catch {
    rmSync(tmp, { force: true });
  }
}

export function boot(): Cli {
  const bundle = join(__dirname, 'cli.cjs');
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
  // The build keeps the bundle ASCII (scripts/build.mjs checks), so Latin-1 reads it exactly, in a
  // tenth of the time UTF-8 decoding takes for its 2.7 MB: every command starts here.
  const source = readFileSync(bundle).toString('latin1');
  const file = dir ? join(dir, `cli-${__SHADOWCODE_BUNDLE_HASH__}-${process.version}-${process.arch}.v8`) : undefined;
  const cached = file ? readCache(file) : undefined;
  const cachedData = cached?.data;
  const dynamicImport = (vmConstants as unknown as { USE_MAIN_CONTEXT_DEFAULT_LOADER?: symbol }).USE_MAIN_CONTEXT_DEFAULT_LOADER;
  const options = { filename: bundle, ...(dynamicImport ? { importModuleDynamically: dynamicImport as never } : {}) };
  let script: Script;
  try {
    script = new Script(nodeModule.Module.wrap(source), { ...options, cachedData });
  } catch {
    script = new Script(nodeModule.Module.wrap(source), options);
  }
  const usable = cached !== undefined && !script.cachedDataRejected;
  if (dir && file && !(usable && cached.warm)) {
    // A cache from a short command holds little beyond the top level: a process that warms up replaces it once.
    let saved = false;
    const save = (warm: boolean) => {
      if (saved) return;
      saved = true;
      try {
        writeCache(dir, file, script.createCachedData(), warm);
      } catch {
        // an accelerator only
      }
    };
    setTimeout(() => save(true), SAVE_AFTER_MS).unref();
    if (!usable) process.once('exit', () => save(false));
  }
  const mod = { exports: {} as Cli };
  const fn = script.runInThisContext() as (exports: unknown, require: NodeJS.Require, module: unknown, filename: string, dirname: string) => void;
  fn.call(mod.exports, mod.exports, nodeModule.createRequire(bundle), mod, bundle, dirname(bundle));
  return mod.exports;
}
