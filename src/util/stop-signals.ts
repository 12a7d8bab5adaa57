/*
 * The signals that stop a long-running command (mcp serve over stdio or HTTP, the
 * console, engine start --foreground, run, test) through its own cleanup instead of at
 * once: Ctrl-C (SIGINT), a kill (SIGTERM) and the terminal closing (SIGHUP). Node dies of
 * any of them on the spot while nothing listens, and then skips what the command undoes on
 * the way out: its jobs and their process groups, the sandbox placeholders still lingering
 * in a project (they go at exit), socket, lock and record files, the store.
 *
 *   onStopSignal(handler) ─► each of the three calls handler(signal) instead of ending
 *   the process ─► off() once the cleanup is done: they end it again
 *   nextStopSignal() ─► the first of them, as a promise (off() as above)
 *   abortOnStopSignal() ─► the first of them aborts a signal (a server started to read its
 *   catalog is stopped through the connection's own close), off() as above
 *
 * One list for every command, so that a command cannot handle one and forget another.
 */

export const STOP_SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/**
 * Until the returned function is called, a stop signal calls `handler` rather than ending the process.
 *
 * To hand over to another handler, add the new one before calling off() for the old. Node closes its
 * watcher of a signal with the last listener, and a signal already taken by the watcher but not yet
 * dispatched (it is, on the next turn of the event loop) then goes to nobody: the process neither
 * stops nor dies. One that comes between the two calls would end the process on the spot.
 */
export function onStopSignal(handler: (signal: NodeJS.Signals) => void): () => void {
  for (const s of STOP_SIGNALS) process.on(s, handler);
  return () => {
    for (const s of STOP_SIGNALS) process.off(s, handler);
  };
}

/** The first stop signal; later ones are ignored until `off()`, so they cannot cut the cleanup short. */
export function nextStopSignal(): { readonly signal: Promise<NodeJS.Signals>; off(): void } {
  let off = () => {};
  const signal = new Promise<NodeJS.Signals>((resolve) => {
    off = onStopSignal(resolve);
  });
  return { signal, off };
}

/** An AbortSignal that the first stop signal aborts (later ones are ignored until `off()`). */
export function abortOnStopSignal(): { readonly signal: AbortSignal; off(): void } {
  const ac = new AbortController();
  const off = onStopSignal(() => ac.abort());
  return { signal: ac.signal, off };
}
