/* shadow_understand: a bounded project map; saving it to memory is an explicit write. */
import { saveMapNote } from '../../engine/memory.js';
import { mapAsNote, understand } from '../../engine/understand.js';
import { READ_ONLY, type ToolDef } from './types.js';

interface Args {
  save?: boolean;
}

export const shadowUnderstand: ToolDef<Args> = {
  name: 'shadow_understand',
  annotations: { ...READ_ONLY, readOnlyHint: false },
  action: (a) => (a.save ? 'tool:shadow_understand.save' : 'tool:shadow_understand'),
  run(conn, args, ticket) {
    const l = conn.engine.policy.limits.inspection;
    const map = understand(conn.project, l, conn.engine.policy.limits.files);
    if (!args.save) return { map, saved: false };
    const note = saveMapNote(ticket, conn.engine.db(), conn.project, mapAsNote(map, new Date().toISOString()), l.memory_note_bytes);
    return { map, saved: true, memory_hash: note.hash };
  },
};
