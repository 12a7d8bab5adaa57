/*
 * Proof that a request passed the gate, good for exactly what was decided.
 *
 *   gate.enforce(request, run) ─► authorize ─► audit ─► mintTicket ─► run(ticket)
 *                                                                      │
 *   executor(ticket, …) ◄──────────────────────────────────────────────┘
 *        └─ assertTicket(ticket, actions, resource?) throws SC_TICKET_REFUSED unless the gate
 *           minted it for one of exactly these actions (and, if named, this record)
 *
 * Tickets are instances of a module-private class whose private field brands them, so a
 * caller cannot forge one with an object literal or a copy. An executor names the actions that may open it in full: there are
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

/**
 * A ticket the gate minted. Only instances of this module-private class carry its private
 * field, and `#minted in x` cannot be satisfied by an object literal, a copy, a prototype
 * trick or a proxy of a real ticket: the brand lives in the object itself, with no table
 * to grow and no weak references for the collector to sweep. Frozen once built.
 * Any ticket leads to this class (`ticket.constructor`), so the constructor itself also
 * asks for a key only this module holds: `new ticket.constructor(...)`, or a subclass of
 * it, builds nothing.
 */
const MINT = Symbol('mint');

class Minted implements GateTicket {
  readonly #minted = true;
  readonly decisionId: string;
  readonly action: string;
  readonly ceiling: Level;
  readonly owner: string;
  declare readonly resource?: TicketResource;

  constructor(key: typeof MINT, fields: GateTicket) {
    if (key !== MINT) throw new ScError('SC_TICKET_REFUSED', 'a ticket is minted by the gate only; nothing was built');
    this.decisionId = fields.decisionId;
    this.action = fields.action;
    this.ceiling = fields.ceiling;
    this.owner = fields.owner;
    if (fields.resource) (this as { resource?: TicketResource }).resource = Object.freeze({ kind: fields.resource.kind, id: fields.resource.id });
    Object.freeze(this);
  }

  static is(x: unknown): boolean {
    return typeof x === 'object' && x !== null && #minted in x;
  }
}

export function mintTicket(fields: GateTicket): GateTicket {
  return new Minted(MINT, fields);
}

/**
 * Opens an executor: `ticket` must come from the gate, its action must be `actions`
 * (or one of them, exactly), and when `resource` is given the decision must have been
 * about that very record.
 */
export function assertTicket(ticket: GateTicket, actions: string | readonly string[], resource?: TicketResource): void {
  const allowed = typeof actions === 'string' ? [actions] : actions;
  const real = Minted.is(ticket);
  const forAction = real && allowed.includes(ticket.action);
  const forRecord = !resource || (ticket.resource?.kind === resource.kind && ticket.resource.id === resource.id);
  if (real && forAction && forRecord) return;
  // INVARIANT: executors are only reachable through gate.enforce with their own decision; reaching here is a bug, not a denial.
  const wanted = allowed.join(' | ') + (resource ? ` on ${resource.kind} ${resource.id}` : '');
  const got = !real ? 'no ticket the gate minted' : !forAction ? `a ticket for ${ticket.action}` : `a ticket for ${ticket.resource ? `${ticket.resource.kind} ${ticket.resource.id}` : 'no record'}`;
  throw new ScError('SC_TICKET_REFUSED', `executor for ${wanted} called with ${got}; nothing was done`, { wanted: [...allowed], ...(resource ? { resource } : {}), got: real ? ticket.action : null });
}
