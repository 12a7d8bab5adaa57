/** Opaque, sortable-by-time identifiers: `<prefix>_<ms base36><random hex>`. */
import { randomBytes } from 'node:crypto';

export function newId(prefix: string): string {
  return `${prefix}_${Date.now().toString(36).padStart(9, '0')}${randomBytes(6).toString('hex')}`;
}
