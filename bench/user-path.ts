/*
 * PATH as the user has it, for the benches that start a sandbox: `npm run bench` puts this
 * checkout's node_modules/.bin folders (and npm's node-gyp-bin) first, and the sandbox shows each
 * package a .bin link leads to, a mount each (35 here, about 10 ms of every start), which a user's
 * own start does not have. `node bench/spawn.mjs` run directly never had them.
 */
export const userPath = (path = ''): string =>
  path
    .split(':')
    .filter((d) => d && !d.endsWith('/node_modules/.bin') && !d.endsWith('/node-gyp-bin'))
    .join(':');
