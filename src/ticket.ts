/*
 * Proof that a request passed the gate, good for exactly what was decided.
 *
 *   gate.enforce(request, run) ─► authorize ─► audit ─► mintTicket ─► run(ticket)
 *                                                                      │
 *   executor(ticket, …) ◄──────────────────────────────────────────────┘
 *        └─ assertTicket(ticket, actions, resource?) throws SC_TICKET_REFUSED unless the gate
 *           minted it for one of exactly these actions (and, if named, this record)
 *
 * Tickets live in a module-private WeakSet, so a caller cannot forge one with an
 * object literal. An executor names the actions that may open it in full: there are
 * no patterns, so a ticket for `tool:shadow_status` never opens the spawn point.
 * test/architecture.test.ts checks that only src/policy/gate.ts calls mintTicket,
 * and that every executor entry point takes a ticket and checks it first.
 */
import { ScError } from './errors.js';

export type Level = 'read_only' | 'workspace' | 'elevated';

/** The record a decision was about, when the request named one (an approval, a job). */
export interface TicketResource {
  readonly kind: string;
  readonly id: string;
}

export interface GateTicket {
  readonly decisionId: string;
  readonly action: string;
  readonly ceiling: Level;
  readonly owner: string;
  readonly resource?: TicketResource;
}

const minted = new WeakSet<GateTicket>();

export function mintTicket(fields: GateTicket): GateTicket {
  const ticket = Object.freeze({ ...fields, ...(fields.resource ? { resource: Object.freeze({ kind: fields.resource.kind, id: fields.resource.id }) } : {}) });
  minted.add(ticket);
  return ticket;
}

/**
 * Opens an executor: `ticket` must come from the gate, its action must be `actions`
 * (or one of them, exactly), and when `resource` is given the decision must have been
 * about that very record.
 */
export function assertTicket(ticket: GateTicket, actions: string | readonly string[], resource?: TicketResource): void {
  const allowed = typeof actions === 'string' ? [actions] : actions;
  const real = minted.has(ticket);
  const forAction = real && allowed.includes(ticket.action);
  const forRecord = !resource || (ticket.resource?.kind === resource.kind && ticket.resource.id === resource.id);
  if (real && forAction && forRecord) return;
  // INVARIANT: executors are only reachable through gate.enforce with their own decision; reaching here is a bug, not a denial.
  const wanted = allowed.join(' | ') + (resource ? ` on ${resource.kind} ${resource.id}` : '');
  const got = !real ? 'no ticket the gate minted' : !forAction ? `a ticket for ${ticket.action}` : `a ticket for ${ticket.resource ? `${ticket.resource.kind} ${ticket.resource.id}` : 'no record'}`;
  throw new ScError('SC_TICKET_REFUSED', `executor for ${wanted} called with ${got}; nothing was done`, { wanted: [...allowed], ...(resource ? { resource } : {}), got: real ? ticket.action : null });
}
