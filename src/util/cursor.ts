/*
 * Pagination cursors: opaque to clients, validated on the way back in. A cursor
 * is base64url JSON of the last row's sort key; a tampered one is a clear error.
 */
import { ScError } from '../errors.js';

export function encodeCursor(key: readonly (string | number)[]): string {
  return Buffer.from(JSON.stringify(key)).toString('base64url');
}

export function decodeCursor(cursor: string, arity: number): (string | number)[] {
  try {
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(v) && v.length === arity && v.every((x) => typeof x === 'string' || typeof x === 'number')) return v;
  } catch {
    /* fall through */
  }
  throw new ScError('SC_CURSOR_INVALID', 'the cursor is not one this server issued');
}

export interface Page<T> {
  readonly items: T[];
  readonly next_cursor: string | null;
}
