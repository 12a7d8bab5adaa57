/*
 * The secret store: secrets.json in the profile, mode 0600, never state.db
 * (tools may read state.db, and people back it up or share it).
 *
 *   set/remove ─► (gate ticket) ─► state.db write lock ─► sweep stale temp files
 *              ─► read file ─► modify ─► write .secrets.json.PID.RAND.tmp 0600
 *              ─► fsync ─► rename over secrets.json
 *
 * The database lock serialises writers across processes, so two `secret set`
 * commands at once cannot lose one another's value. A writer killed between
 * the temp write and the rename (SIGKILL, power loss) leaves a temp file that
 * holds every secret: opening the store removes those of dead processes, and
 * every write, holding the lock, removes them all, so `secret remove` really
 * removes a value. Temp files are dot-named, out of a plain listing's way. Values leave this module
 * only through reveal(), which registers them with the redactor first; and opening the store
 * makes the whole file a source of the scrubber (util/secret-values.ts), so a value is
 * scrubbed from output even when this process never revealed it (a command that printed it).
 */
import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, openSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { ScError } from '../errors.js';
import { addSecretSource, registerSecretValue } from '../util/secret-values.js';
import { assertTicket, type GateTicket } from '../ticket.js';
import { type Db, withWriteLock } from './db.js';
import { didYouMean } from '../util/suggest.js';

export const SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

interface Entry {
  value: string;
  created_at: string;
  updated_at: string;
}
interface FileShape {
  version: 1;
  secrets: Record<string, Entry>;
  /** Literal env values of legacy definitions, by definition id: kept here so state.db never holds them. */
  definition_env?: Record<string, Record<string, string>>;
}

export interface SecretInfo {
  readonly name: string;
  readonly created_at: string;
  readonly updated_at: string;
}

export function checkSecretName(name: string): void {
  if (!SECRET_NAME.test(name)) {
    throw new ScError('SC_SECRET_NAME_INVALID', `secret name "${name.slice(0, 64)}" must match ${SECRET_NAME.source}`);
  }
}

/** Temp files of a write in progress: `.secrets.json.PID.RAND.tmp` (and the undotted name older versions used). */
const TEMP = /^\.?secrets\.json\.(\d+)\.[0-9a-f]+\.tmp$/;

function processAlive(pid: number): boolean {
  if (pid === process.pid) return false; // this process has no write in flight while it sweeps
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Makes every value in the profile's secrets.json known to the scrubber, read
 * again whenever the file changes. Called wherever a profile's state.db is
 * opened, so output is scrubbed of stored secrets this process never revealed.
 */
export function scrubProfileSecrets(profileDir: string): void {
  const path = join(profileDir, 'secrets.json');
  addSecretSource(path, {
    // Asked on every scrub: a missing file (no secret stored yet, the common case) must not cost a thrown error.
    token: () => {
      try {
        const st = statSync(path, { throwIfNoEntry: false });
        return st ? `${st.ino}:${st.size}:${st.mtimeMs}` : 'none';
      } catch {
        return 'none';
      }
    },
    entries: () => {
      let data: Partial<FileShape>;
      try {
        data = JSON.parse(readFileSync(path, 'utf8')) as Partial<FileShape>;
      } catch {
        return [];
      }
      const out: Array<readonly [string, string]> = [];
      for (const [name, e] of Object.entries(data.secrets ?? {})) if (typeof e?.value === 'string') out.push([name, e.value]);
      for (const env of Object.values(data.definition_env ?? {})) for (const [k, v] of Object.entries(env ?? {})) if (typeof v === 'string') out.push([k, v]);
      return out;
    },
  });
}

export class SecretStore {
  readonly path: string;

  constructor(private readonly profileDir: string, private readonly db: Db, private readonly limits: { value_bytes: number; count: number }) {
    this.path = join(profileDir, 'secrets.json');
    this.sweep(false);
    scrubProfileSecrets(profileDir);
  }

  /** Removes temp files a killed writer left: with everyone=false only those of dead processes (no lock held). */
  private sweep(everyone: boolean): void {
    let names: string[];
    try {
      names = readdirSync(this.profileDir);
    } catch {
      return;
    }
    for (const name of names) {
      const m = TEMP.exec(name);
      if (!m || (!everyone && processAlive(Number(m[1])))) continue;
      try {
        unlinkSync(join(this.profileDir, name));
      } catch {
        /* already gone: another process swept it */
      }
    }
  }

  private read(): FileShape {
    let text: string;
    try {
      const st = statSync(this.path);
      if ((st.mode & 0o077) !== 0) {
        throw new ScError('SC_SECRET_STORE_INVALID', `${this.path} has mode ${(st.mode & 0o777).toString(8)}; run chmod 600 ${this.path}`);
      }
      text = readFileSync(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { version: 1, secrets: {} };
      throw err;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new ScError('SC_SECRET_STORE_INVALID', `${this.path} is not valid JSON`);
    }
    const p = parsed as Partial<FileShape>;
    if (!p || p.version !== 1 || typeof p.secrets !== 'object' || p.secrets === null) {
      throw new ScError('SC_SECRET_STORE_INVALID', `${this.path} is not a shadowcode secret store`);
    }
    return p as FileShape;
  }

  /** Called with the write lock held: no other writer has a temp file in flight, so every one found is stale. */
  private write(data: FileShape): void {
    this.sweep(true);
    const tmp = join(this.profileDir, `.secrets.json.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
    const fd = openSync(tmp, 'wx', 0o600);
    try {
      writeSync(fd, JSON.stringify(data));
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    try {
      renameSync(tmp, this.path);
    } catch (err) {
      unlinkSync(tmp);
      throw err;
    }
  }

  list(): SecretInfo[] {
    const { secrets } = this.read();
    return Object.keys(secrets)
      .sort()
      .map((name) => ({ name, created_at: secrets[name]!.created_at, updated_at: secrets[name]!.updated_at }));
  }

  has(name: string): boolean {
    return Object.prototype.hasOwnProperty.call(this.read().secrets, name);
  }

  /** The value, for a connection that is starting; it is registered for redaction before it is returned. */
  reveal(name: string): string | undefined {
    const { secrets } = this.read();
    if (!Object.prototype.hasOwnProperty.call(secrets, name)) return undefined;
    const entry = secrets[name]!;
    registerSecretValue(entry.value, name);
    return entry.value;
  }

  set(ticket: GateTicket, name: string, value: string): { created: boolean } {
    assertTicket(ticket, 'cli:secret.set');
    checkSecretName(name);
    // A value of only spaces or newlines is a paste gone wrong, never a credential.
    if (value.trim().length === 0) throw new ScError('SC_SECRET_VALUE_INVALID', value.length === 0 ? 'secret value is empty' : 'secret value is only whitespace');
    if (Buffer.byteLength(value) > this.limits.value_bytes) {
      throw new ScError('SC_SECRET_VALUE_INVALID', `secret value is larger than ${this.limits.value_bytes} bytes`);
    }
    registerSecretValue(value, name);
    return withWriteLock(this.db, () => {
      const data = this.read();
      const existing = Object.prototype.hasOwnProperty.call(data.secrets, name) ? data.secrets[name] : undefined;
      if (!existing && Object.keys(data.secrets).length >= this.limits.count) {
        throw new ScError('SC_LIMIT_REACHED', `the secret store already holds ${this.limits.count} secrets, the most allowed (secrets.count); remove one first`);
      }
      const now = new Date().toISOString();
      data.secrets[name] = { value, created_at: existing?.created_at ?? now, updated_at: now };
      this.write(data);
      return { created: !existing };
    });
  }

  /** The literal env of a stored definition, for the moment a connection starts. */
  definitionEnv(id: string): Record<string, string> {
    const env = this.read().definition_env?.[id] ?? {};
    for (const [k, v] of Object.entries(env)) registerSecretValue(v, k);
    return env;
  }

  /** Which definitions have literal env values stored here, by variable name only (no value is read out). */
  definitionEnvNames(): Array<{ definition: string; names: string[] }> {
    const all = this.read().definition_env ?? {};
    return Object.keys(all)
      .sort()
      .map((definition) => ({ definition, names: Object.keys(all[definition]!).sort() }));
  }

  /** Replaces (or with an empty env, drops) a definition's literal env values. */
  putDefinitionEnv(ticket: GateTicket, id: string, env: Record<string, string>): void {
    assertTicket(ticket, ['cli:mcp.add', 'cli:mcp.remove']);
    for (const [k, v] of Object.entries(env)) registerSecretValue(v, k);
    withWriteLock(this.db, () => {
      const data = this.read();
      const all = { ...(data.definition_env ?? {}) };
      if (Object.keys(env).length) all[id] = env;
      else delete all[id];
      data.definition_env = all;
      this.write(data);
    });
  }

  remove(ticket: GateTicket, name: string): void {
    assertTicket(ticket, 'cli:secret.remove');
    checkSecretName(name);
    withWriteLock(this.db, () => {
      const data = this.read();
      if (!Object.prototype.hasOwnProperty.call(data.secrets, name)) {
        throw new ScError('SC_SECRET_NOT_FOUND', `no secret named ${name}${didYouMean(name, Object.keys(data.secrets))}`);
      }
      delete data.secrets[name];
      this.write(data);
    });
  }
}
