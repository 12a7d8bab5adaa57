/*
 * The tool input schema hosts are shown, derived from the full schema in
 * schemas/tools/<name>.schema.json.
 *
 *   full schema ─► top level: type "object", properties, required, additionalProperties
 *               ├► allOf of `if X is V then required [...]` ─► "Required when X is V." on each property
 *               └► anyOf of required alternatives          ─► "Give at least one of A or B." on each
 *
 * The Anthropic and OpenAI function-calling APIs (and so Claude Code and Codex)
 * refuse allOf/anyOf/oneOf/if/then/else/not/enum at the top of a tool's input
 * schema, and drop or fail on the tool. Nothing is loosened by serving this
 * form: every call is still validated against the full schema (checkToolArgs),
 * and the rules it leaves out are stated in the property descriptions, where a
 * model reads them. A combinator this module cannot restate is an error, so a
 * new schema shape is noticed in tests rather than silently dropped.
 */

type Json = Record<string, unknown>;

/** Top-level keys not served: what hosts refuse, our own metadata, and what the tool object itself carries. */
const NOT_SERVED = ['allOf', 'anyOf', 'oneOf', 'if', 'then', 'else', 'not', 'enum', 'const', '$schema', '$id', '$ref', '$defs', 'title', 'description'];

/** `a`, `a or b`, `a, b or c` */
function orList(items: readonly string[]): string {
  return items.length < 2 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} or ${items.at(-1)}`;
}

function fail(tool: string, why: string): never {
  throw new Error(`schemas/tools/${tool}.schema.json: ${why}; restate it for hosts in src/schema/host-schema.ts`);
}

/** `{ if: { properties: { action: { const: "append" } }, required: ["action"] }, then: { required: ["text"] } }` */
function conditional(tool: string, rule: unknown): { on: string; value: unknown; required: string[] } {
  const r = rule as { if?: Json; then?: Json; else?: unknown };
  const props = r.if?.properties as Record<string, Json> | undefined;
  const keys = props ? Object.keys(props) : [];
  const on = keys[0];
  const thenKeys = r.then ? Object.keys(r.then) : [];
  // Without `required: [on]` in the `if`, the rule would also hold when the property is absent.
  const ifKeys = r.if ? Object.keys(r.if).sort().join() : '';
  const guarded = ifKeys === 'properties,required' && (r.if?.required as unknown[]).length === 1 && (r.if?.required as unknown[])[0] === on;
  if (keys.length !== 1 || on === undefined || !('const' in (props?.[on] ?? {})) || !guarded || r.else !== undefined || thenKeys.join() !== 'required') {
    fail(tool, 'an allOf entry other than "if one property has a value, then these are required"');
  }
  return { on, value: props?.[on]?.const, required: r.then?.required as string[] };
}

function sentence(conds: Map<string, unknown[]>): string {
  const parts = [...conds].map(([on, values]) => `${on} is ${orList(values.map((v) => JSON.stringify(v)))}`);
  return `Required when ${parts.join(', or when ')}.`;
}

function describe(prop: Json, extra: string): Json {
  const d = typeof prop.description === 'string' && prop.description ? `${prop.description.replace(/\.?$/, '.')} ${extra}` : extra;
  return { ...prop, description: d };
}

/** The host-safe input schema for one tool. Pure; the full schema is not modified. */
export function hostInputSchema(tool: string, full: Json): Json {
  const properties: Record<string, Json> = {};
  for (const [name, p] of Object.entries((full.properties ?? {}) as Record<string, Json>)) {
    // Some hosts want a type on every property; a const implies one.
    properties[name] = p.type === undefined && 'const' in p ? { type: typeof p.const === 'number' ? 'number' : typeof p.const, ...p } : { ...p };
  }
  const notes = new Map<string, string[]>();
  const note = (name: string, text: string) => {
    if (!(name in properties)) fail(tool, `a rule names ${name}, which is not a property`);
    notes.set(name, [...(notes.get(name) ?? []), text]);
  };

  const when = new Map<string, Map<string, unknown[]>>();
  for (const rule of (full.allOf ?? []) as unknown[]) {
    const c = conditional(tool, rule);
    for (const req of c.required) {
      const conds = when.get(req) ?? new Map<string, unknown[]>();
      conds.set(c.on, [...(conds.get(c.on) ?? []), c.value]);
      when.set(req, conds);
    }
  }
  for (const [name, conds] of when) note(name, sentence(conds));

  if (full.anyOf !== undefined) {
    const alternatives = (full.anyOf as Json[]).map((a) => {
      if (Object.keys(a).join() !== 'required' || (a.required as string[]).length !== 1) fail(tool, 'an anyOf entry other than one required property');
      return (a.required as string[])[0] as string;
    });
    for (const name of alternatives) note(name, `Give at least one of ${orList(alternatives)}.`);
  }
  for (const k of ['oneOf', 'if', 'then', 'else', 'not', 'enum', 'const', '$ref', '$defs']) if (k in full) fail(tool, `top-level ${k}`);
  for (const [name, texts] of notes) properties[name] = describe(properties[name] as Json, texts.join(' '));

  const served: Json = { type: 'object', properties, required: [...((full.required ?? []) as string[])] };
  for (const [k, v] of Object.entries(full)) {
    if (!(k in served) && !NOT_SERVED.includes(k)) served[k] = v;
  }
  return served;
}
