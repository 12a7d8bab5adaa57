/*
 * Opaque identifiers that sort by creation time: `<prefix>_<ms base36><seq><random>`.
 * The sequence keeps ids made in the same millisecond by this process in order.
 */
import { randomBytes } from 'node:crypto';

let lastMs = 0;
let seq = 0;

export function newId(prefix: string): string {
  const ms = Date.now();
  seq = ms === lastMs ? seq + 1 : 0;
  lastMs = ms;
  return `${prefix}_${ms.toString(36).padStart(9, '0')}${seq.toString(36).padStart(3, '0')}${randomBytes(5).toString('hex')}`;
}
