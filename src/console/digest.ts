/*
 * What an approval's digest covers: the exact record a person reads before deciding.
 *
 *   {id, job_id, kind, action} ─► canonical JSON ─► sha256 hex
 *
 * The page sends back the digest of what it showed; the server recomputes it from the
 * stored row, so a decision is only ever taken on the content the person saw.
 */
import { canonicalJson, sha256 } from '../util/canonical-json.js';

export function approvalDigest(a: { id: string; job_id: string; kind: string; action: unknown }): string {
  return sha256(canonicalJson({ id: a.id, job_id: a.job_id, kind: a.kind, action: a.action }));
}
