/*
 * A profile's settings.json: absent means defaults; present means it must match
 * schemas/settings.schema.json. Read lazily, only by what needs it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Settings } from '../../gen/types/settings.js';
import { ScError } from '../errors.js';
import { check } from '../schema/validate.js';
import { deepFreeze } from '../util/freeze.js';

export function readSettings(profileDir: string): Settings {
  const path = join(profileDir, 'settings.json');
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return deepFreeze({});
    throw new ScError('SC_SETTINGS_INVALID', `cannot read ${path}: ${(err as NodeJS.ErrnoException).code}`);
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw new ScError('SC_SETTINGS_INVALID', `${path} is not valid JSON: ${(err as Error).message}`);
  }
  return deepFreeze(check<Settings>('settings', data, 'SC_SETTINGS_INVALID', path));
}
