/*
 * Where a profile's shared engine lives, and how a client decides it is ours.
 *
 *   <profile>/engine.sock   Unix socket, 0600, inside the 0700 profile directory
 *   <profile>/engine.token  32 random bytes (hex), 0600, rewritten by every engine start
 *   <profile>/engine.lock   SQLite file whose exclusive lock the running engine holds
 *   <profile>/engine.log    what a background engine writes instead of a terminal
 *
 * Node cannot read SO_PEERCRED, so the peer is checked in two halves. The client
 * refuses a socket (and a token file) unless it is a socket owned by this user with
 * no group or other permission bits, in a directory that is also private: another
 * user cannot plant one there. The engine accepts only a client that proves it can
 * read the token (an HMAC over both sides' nonces), and proves the same back, so
 * the token itself never crosses the socket.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { closeSync, fsyncSync, lstatSync, openSync, readSync, renameSync, type Stats, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ScError } from '../../errors.js';

export interface EngineFiles {
  readonly dir: string;
  readonly sock: string;
  readonly token: string;
  readonly lock: string;
  readonly log: string;
}

export function engineFiles(profileDir: string): EngineFiles {
  return {
    dir: profileDir,
    sock: join(profileDir, 'engine.sock'),
    token: join(profileDir, 'engine.token'),
    lock: join(profileDir, 'engine.lock'),
    log: join(profileDir, 'engine.log'),
  };
}

/** Linux refuses longer socket paths (sun_path is 108 bytes with its terminator). */
export const SOCKET_PATH_BYTES = 107;

const myUid = (): number => (typeof process.getuid === 'function' ? process.getuid() : -1);

function privately(path: string, what: string, isKind: (st: Stats) => boolean, uid: number): void {
  let st: Stats;
  try {
    st = lstatSync(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new ScError('SC_ENGINE_NOT_RUNNING', `no ${what} at ${path}`);
    throw new ScError('SC_ENGINE_PEER_REFUSED', `cannot inspect ${what} ${path}: ${code}`);
  }
  if (!isKind(st)) throw new ScError('SC_ENGINE_PEER_REFUSED', `${path} is not ${/^[aeiou]/.test(what) ? 'an' : 'a'} ${what}`);
  if (st.uid !== uid) throw new ScError('SC_ENGINE_PEER_REFUSED', `${what} ${path} belongs to uid ${st.uid}, not to this user (${uid})`);
  if ((st.mode & 0o077) !== 0) throw new ScError('SC_ENGINE_PEER_REFUSED', `${what} ${path} has mode ${(st.mode & 0o777).toString(8)}; only its owner may use it`);
}

/** Refuses a socket that another user could have created or can use; `uid` is this process's. */
export function checkSocketPeer(sock: string, uid = myUid()): void {
  privately(dirname(sock), 'profile directory', (st) => st.isDirectory(), uid);
  privately(sock, 'engine socket', (st) => st.isSocket(), uid);
}

/** The token of the running engine, read only from a private regular file. */
export function readToken(files: EngineFiles, uid = myUid()): Buffer {
  privately(files.token, 'engine token file', (st) => st.isFile(), uid);
  const fd = openSync(files.token, 'r');
  try {
    const buf = Buffer.alloc(65);
    const n = readSync(fd, buf, 0, buf.length, 0);
    const text = buf.subarray(0, n).toString('utf8').trim();
    if (!/^[0-9a-f]{64}$/.test(text)) throw new ScError('SC_ENGINE_PEER_REFUSED', `engine token file ${files.token} is malformed`);
    return Buffer.from(text, 'hex');
  } finally {
    closeSync(fd);
  }
}

/** A fresh token, written 0600 beside the socket and renamed into place whole. */
export function writeToken(files: EngineFiles): Buffer {
  const token = randomBytes(32);
  const tmp = `${files.token}.${process.pid}.tmp`;
  const fd = openSync(tmp, 'w', 0o600);
  try {
    writeSync(fd, `${token.toString('hex')}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, files.token);
  return token;
}

export const newNonce = (): string => randomBytes(32).toString('hex');

/** Each side's proof binds both nonces and its role, so a proof cannot be replayed or reflected. */
export function proof(token: Buffer, side: 'engine' | 'client', engineNonce: string, clientNonce: string): string {
  return createHmac('sha256', token).update(`shadowcode-engine-v1\n${side}\n${engineNonce}\n${clientNonce}`).digest('hex');
}

export function proofMatches(expected: string, given: string): boolean {
  const a = Buffer.from(expected, 'hex');
  const b = Buffer.from(given, 'hex');
  return a.length === b.length && a.length === 32 && timingSafeEqual(a, b);
}
