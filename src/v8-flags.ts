/*
 * The V8 flags shadowcode sets while it runs, in one place, because V8 keys a code cache
 * by its flags: a cache made after the bundle set a flag is refused by a process that
 * compiles the bundle before setting it. src/boot.ts sets these before it compiles the
 * CLI, so the cache it saves is one the next start accepts.
 *
 *   --enable-experimental-regexp-engine: search_text runs a model's pattern on V8's
 *   linear-time engine (the `l` flag), so no pattern can backtrack for ever.
 */
export const V8_FLAGS = ['--enable-experimental-regexp-engine'] as const;
