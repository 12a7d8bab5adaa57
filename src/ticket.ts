/*
 * Proof that a request passed the gate.
 *
 *   gate.enforce(request, run) ─► authorize ─► audit ─► mintTicket ─► run(ticket)
 *                                                                      │
 *   executor(ticket, …) ◄──────────────────────────────────────────────┘
 *        └─ assertTicket(ticket, action) throws unless the gate minted it
 *
 * Tickets live in a module-private WeakSet, so a caller cannot forge one with an
 * object literal. test/architecture.ts checks that only src/policy/gate.ts calls
 * mintTicket, and that every executor entry point takes a ticket.
 */
import { ScError } from './errors.js';

export type Level = 'read_only' | 'workspace' | 'elevated';

export interface GateTicket {
  readonly decisionId: string;
  readonly action: string;
  readonly ceiling: Level;
  readonly owner: string;
}

const minted = new WeakSet<GateTicket>();

export function mintTicket(fields: GateTicket): GateTicket {
  const ticket = Object.freeze({ ...fields });
  minted.add(ticket);
  return ticket;
}

/** `action` may end with `*` to accept a family (`tool:shadow_memory.*`). */
export function assertTicket(ticket: GateTicket, action: string): void {
  const ok =
    minted.has(ticket) &&
    (action.endsWith('*') ? ticket.action.startsWith(action.slice(0, -1)) : ticket.action === action);
  // INVARIANT: executors are only reachable through gate.enforce; reaching here is a bug, not a denial.
  if (!ok) throw new ScError('SC_INTERNAL', `executor for ${action} called without a matching gate ticket`);
}
