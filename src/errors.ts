/*
 * The one registry of error codes. Every failure a user can see carries one of
 * these codes, a one-line message and optional data; CLI errors exit with the
 * code's exit status, MCP tool errors carry it in structured content.
 *
 * Codes are stable: a retired code is never reused for another meaning.
 * test/errors.ts checks that each code is used in src/ and documented in README.
 */

export const EXIT = { ok: 0, error: 1, usage: 2, denied: 3, integrity: 4 } as const;

export const ERRORS = {
  SC_USAGE: { exit: EXIT.usage, summary: 'The command line is malformed.' },
  SC_UNKNOWN_COMMAND: { exit: EXIT.usage, summary: 'No such command.' },
  SC_UNKNOWN_OPTION: { exit: EXIT.usage, summary: 'An option is not known to this command.' },
  SC_BAD_VALUE: { exit: EXIT.usage, summary: 'An option or argument has an invalid value.' },
  SC_WORKSPACE_REQUIRED: { exit: EXIT.usage, summary: 'This command needs the project: --project DIR (or --workspace DIR).' },
  SC_WORKSPACE_INVALID: { exit: EXIT.usage, summary: 'The --project (--workspace) directory does not exist or is not a directory.' },
  SC_POLICY_INVALID: { exit: EXIT.error, summary: 'A policy file is missing or does not match its schema.' },
  SC_POLICY_REQUEST_INVALID: { exit: EXIT.error, summary: 'A request to the gate is malformed.' },
  SC_POLICY_DENIED: { exit: EXIT.denied, summary: 'The policy denied the action.' },
  SC_PROFILE_INVALID: { exit: EXIT.usage, summary: 'The profile name or directory is not usable.' },
  SC_PROFILE_UNSAFE: { exit: EXIT.error, summary: 'The profile directory is writable or readable by other users.' },
  SC_STORE_FAILED: { exit: EXIT.error, summary: 'The profile database could not be opened or written.' },
  SC_STORE_NEWER: { exit: EXIT.error, summary: 'The profile database was written by a newer shadowcode.' },
  SC_AUDIT_BROKEN: { exit: EXIT.integrity, summary: 'The audit hash chain is broken.' },
  SC_AUDIT_NOT_FOUND: { exit: EXIT.error, summary: 'No audit row or recorded decision with that id.' },
  SC_SECRET_NAME_INVALID: { exit: EXIT.usage, summary: 'A secret name must look like an environment variable name.' },
  SC_SECRET_VALUE_INVALID: { exit: EXIT.usage, summary: 'A secret value is empty, only whitespace, or too large.' },
  SC_SECRET_NO_INPUT: { exit: EXIT.usage, summary: 'A secret value must come from stdin or a terminal prompt.' },
  SC_SECRET_NOT_FOUND: { exit: EXIT.error, summary: 'No secret with that name is stored.' },
  SC_SECRET_STORE_INVALID: { exit: EXIT.error, summary: 'The secret store file is unreadable or malformed.' },
  SC_SETTINGS_INVALID: { exit: EXIT.error, summary: 'The profile settings file does not match its schema.' },
  SC_CURSOR_INVALID: { exit: EXIT.usage, summary: 'A pagination cursor was not issued by this server.' },
  SC_HASH_MISMATCH: { exit: EXIT.error, summary: 'The content hash given does not match the current content.' },
  SC_TASK_NOT_FOUND: { exit: EXIT.error, summary: 'No task with that exact id exists in this project.' },
  SC_GOAL_NOT_FOUND: { exit: EXIT.error, summary: 'No goal with that id exists in this project.' },
  SC_GOAL_CLOSED: { exit: EXIT.error, summary: 'The goal is already done or abandoned.' },
  SC_LIMIT_REACHED: { exit: EXIT.error, summary: 'A limit from policy/limits.json was reached.' },
  SC_TOOL_UNKNOWN: { exit: EXIT.error, summary: 'No tool, resource or prompt with that name.' },
  SC_TOOL_CALL_LIMIT: { exit: EXIT.error, summary: 'A model answer made more tool calls than one answer may; the rest were not run.' },
  SC_TOOL_ARGS_INVALID: { exit: EXIT.error, summary: 'Tool arguments do not match the tool input schema, or prompts/get or resources/read params are malformed.' },
  SC_BUSY: { exit: EXIT.error, summary: 'Too many operations are running on this connection.' },
  SC_TIMEOUT: { exit: EXIT.error, summary: 'An operation did not finish within its deadline.' },
  SC_RESULT_TOO_LARGE: { exit: EXIT.error, summary: 'A result is larger than the result cap.' },
  SC_PATH_OUTSIDE: { exit: EXIT.error, summary: 'A path leaves the project, or is a link that does.' },
  SC_FILE_NOT_FOUND: { exit: EXIT.error, summary: 'The file does not exist in the project.' },
  SC_FILE_REFUSED: { exit: EXIT.error, summary: 'The file is a FIFO, device, socket, directory or link where a regular file must be; it is not read.' },
  SC_PATH_PROTECTED: { exit: EXIT.denied, summary: 'The path is protected by policy/protected-paths.json (git metadata, host configs, the profile); a task may not write (or, for the profile, read) it.' },
  SC_WRITE_RACED: { exit: EXIT.error, summary: 'The directory of a write changed under it (swapped for a link, moved or removed); nothing was written.' },
  SC_FILE_CHANGED: { exit: EXIT.error, summary: 'The file changed after its change was shown for approval; nothing was written.' },
  SC_FILE_TOO_LARGE: { exit: EXIT.error, summary: 'The file is larger than the read cap for its kind in policy/limits.json.' },
  SC_SQL_REFUSED: { exit: EXIT.error, summary: 'The SQL statement would write or change the connection, and is refused.' },
  SC_SQL_FAILED: { exit: EXIT.error, summary: 'SQLite rejected the query.' },
  SC_REGISTER_TEMPORARY: { exit: EXIT.error, summary: 'shadowcode runs from a temporary location that a registration must not point to.' },
  SC_REGISTER_EXPANSION: { exit: EXIT.error, summary: 'A value contains ${, which this client would expand.' },
  SC_REGISTER_URL_INVALID: { exit: EXIT.usage, summary: 'The gateway URL is not http://<loopback>:<port>/mcp.' },
  SC_REGISTER_TOKEN_ENV_INVALID: { exit: EXIT.usage, summary: 'The token variable name is invalid, or one the client withholds.' },
  SC_REGISTER_UNSUPPORTED: { exit: EXIT.usage, summary: 'This client, transport and option combination is not offered.' },
  SC_HTTP_BIND_INVALID: { exit: EXIT.usage, summary: 'The --http address is not a loopback IP and port.' },
  SC_HTTP_HOST_INVALID: { exit: EXIT.usage, summary: 'An --allowed-host value is not a plain host name with an optional port.' },
  SC_HTTP_TOKEN_INVALID: { exit: EXIT.usage, summary: 'The gateway token is missing, or not 32-512 bearer-token characters.' },
  SC_HTTP_LISTEN_FAILED: { exit: EXIT.error, summary: 'The gateway could not listen on the address.' },
  SC_JOB_NOT_FOUND: { exit: EXIT.error, summary: 'No job with that id exists for this owner and project.' },
  SC_JOB_NOT_RUNNING: { exit: EXIT.error, summary: 'The job has already ended; there is nothing to cancel.' },
  SC_APPROVAL_NOT_FOUND: { exit: EXIT.error, summary: 'No pending approval with that id exists.' },
  SC_APPROVAL_NOT_PENDING: { exit: EXIT.error, summary: 'The approval was already decided or cancelled.' },
  SC_APPROVAL_CHANGED: { exit: EXIT.error, summary: 'The approval differs from the one the console showed; read it again before deciding.' },
  SC_CONSOLE_REFUSED: { exit: EXIT.denied, summary: 'The console refused the request: wrong Host or Origin, no sign-in cookie, or a spent code.' },
  SC_CONSOLE_NOT_RUNNING: { exit: EXIT.error, summary: 'No console is running for this profile.' },
  SC_APPROVAL_REQUIRED: { exit: EXIT.usage, summary: 'The command needs an explicit approval: --yes, or y at the prompt (without a terminal, --yes).' },
  SC_TEST_COMMAND_UNKNOWN: { exit: EXIT.error, summary: 'No single test command was detected; name one.' },
  SC_ROLLBACK_CONFLICT: { exit: EXIT.error, summary: 'A file changed since the task; the rollback was not applied.' },
  SC_ALREADY_ROLLED_BACK: { exit: EXIT.error, summary: 'The task was already rolled back and its files are as they were before it; nothing was changed.' },
  SC_DEF_INVALID: { exit: EXIT.error, summary: 'An MCP server definition is malformed or breaks a rule.' },
  SC_DEF_NOT_FOUND: { exit: EXIT.error, summary: 'No MCP server definition with that id.' },
  SC_DEF_EXISTS: { exit: EXIT.error, summary: 'A definition with that name exists; replacing it needs --hash of its current content.' },
  SC_DEF_REFUSED: { exit: EXIT.error, summary: 'A project definition file is a link or resolves outside the project.' },
  SC_GRANT_LIMIT: { exit: EXIT.error, summary: 'The project already has the most enabled servers allowed.' },
  SC_PROJECT_UNTRUSTED: { exit: EXIT.error, summary: 'The project is not trusted.' },
  SC_PROJECT_HOLDS_HOME: { exit: EXIT.denied, summary: 'The project is /, your home folder or a folder holding it: it cannot be trusted, and no task, command or coding CLI works in it.' },
  SC_PLUGIN_INVALID: { exit: EXIT.error, summary: 'A plugin manifest is malformed, or its definitions are not by reference.' },
  SC_PLUGIN_NOT_FOUND: { exit: EXIT.error, summary: 'No plugin with that name is installed.' },
  SC_TELEMETRY_INVALID: { exit: EXIT.usage, summary: 'A telemetry setting is unusable: an endpoint that is not http(s), an unsupported protocol, a malformed header or a header value given in clear.' },
  SC_TELEMETRY_REMOTE_UNCONFIRMED: { exit: EXIT.usage, summary: 'The telemetry endpoint is not on this machine; sending there needs --remote.' },
  SC_TELEMETRY_INSECURE: { exit: EXIT.usage, summary: 'Telemetry headers from the secret store go only over https or to this machine.' },
  SC_MODEL_NOT_FOUND: { exit: EXIT.error, summary: 'No configured model with that id, or no model given and no default set.' },
  SC_MODEL_TURN_INCOMPLETE: { exit: EXIT.error, summary: "The model's answer stopped at its output limit (or a content filter) before it was complete." },
  SC_EDIT_NO_MATCH: { exit: EXIT.error, summary: 'edit_file: the old text is not in the file; the closest region is shown.' },
  SC_EDIT_AMBIGUOUS: { exit: EXIT.error, summary: 'edit_file: the old text occurs more than once and replace_all was not set.' },
  SC_APPROVAL_DENIED: { exit: EXIT.denied, summary: 'A person denied the exact action, or its task was cancelled first; it did not run.' },
  SC_CANCELLED: { exit: EXIT.error, summary: 'The task or job was cancelled before it finished.' },
  SC_RUNNER_NOT_FOUND: { exit: EXIT.error, summary: 'The configured coding CLI executable does not exist or cannot be run.' },
  SC_RUNNER_FAILED: { exit: EXIT.error, summary: 'The coding CLI exited with an error, broke its stream format, or crossed a runner limit.' },
  SC_SANDBOX_UNAVAILABLE: { exit: EXIT.denied, summary: 'No OS sandbox can be made here and policy/sandbox.json sets require: the process was not started.' },
  SC_SANDBOX_SETUP_FAILED: { exit: EXIT.error, summary: "The sandbox could not be prepared (the project's protected paths could not be held read-only): the process was not started." },
  SC_SANDBOX_GRANT_REFUSED: { exit: EXIT.denied, summary: "The path cannot be granted to the sandbox: it is the profile, or lies inside or above it, or it is a protected path of the project." },
  SC_SANDBOX_GRANT_SECRET: { exit: EXIT.denied, summary: 'The path is, or lies in, one the sandbox hides as secret (policy/sandbox.json hidden); granting it needs --secret, and every approval then names it.' },
  SC_SANDBOX_GRANT_INVALID: { exit: EXIT.usage, summary: 'A sandbox grant names a path that does not exist or is not absolute, a malformed HOST[:PORT], or a scope over its limit.' },
  SC_SANDBOX_GRANT_NOT_FOUND: { exit: EXIT.error, summary: 'No sandbox grant of that path or host exists in that scope; nothing was revoked.' },
  SC_SANDBOX_GRANTS_INVALID: { exit: EXIT.error, summary: "The profile's sandbox-grants.json is unreadable or does not match its schema; no sandboxed process starts until it is fixed." },
  SC_NET_HOST_REFUSED: { exit: EXIT.denied, summary: "The sandbox's network proxy refused a connection: no grant names that host and port, or its name resolves to a private address no grant names." },
  SC_MODEL_FAILED: { exit: EXIT.error, summary: 'The model provider answered with an error or a malformed stream (its status and a redacted message are given).' },
  SC_MODEL_RESPONSE_TOO_LARGE: { exit: EXIT.error, summary: 'A model answer is larger than models.response_bytes in policy/limits.json.' },
  SC_MODEL_URL_INVALID: { exit: EXIT.usage, summary: 'A model base URL is not plain http(s): no credentials, query or fragment.' },
  SC_MODEL_KEY_INSECURE: { exit: EXIT.usage, summary: 'A model key would be sent over plain http to a host that is not loopback.' },
  SC_MODEL_CREDENTIAL_MISSING: { exit: EXIT.error, summary: 'The environment variable or secret a model key is read from is not set.' },
  SC_MODEL_EXISTS: { exit: EXIT.error, summary: 'A model with that id is already configured; remove it first.' },
  SC_ENGINE_NOT_RUNNING: { exit: EXIT.error, summary: 'No shared engine is running for this profile.' },
  SC_ENGINE_START_FAILED: { exit: EXIT.error, summary: 'The shared engine could not start, or did not answer within its start deadline.' },
  SC_ENGINE_UNAVAILABLE: { exit: EXIT.error, summary: 'The shared engine went away, or its socket closed, while a request was in flight.' },
  SC_ENGINE_PEER_REFUSED: { exit: EXIT.integrity, summary: 'The engine socket or token is not private to this user, or the other side failed authentication.' },
  SC_ENGINE_BUSY: { exit: EXIT.error, summary: 'The engine has as many sockets open as policy/limits.json allows.' },
  SC_ENGINE_OWNERS_FULL: { exit: EXIT.error, summary: 'The profile already has the most ownership sockets open; control requests still work.' },
  SC_ENGINE_PROTOCOL: { exit: EXIT.error, summary: 'A frame on the engine socket is malformed, out of order or abandoned; the socket is closed.' },
  SC_ENGINE_PROJECT_MISMATCH: { exit: EXIT.error, summary: "A frame names a project other than its ownership socket's; the socket is closed." },
  SC_ENGINE_TIMEOUT: { exit: EXIT.error, summary: 'The engine did not answer a submission, a cleanup or a control request within its deadline.' },
  SC_MCP_CONNECT_FAILED: { exit: EXIT.error, summary: 'An external MCP server could not be started, reached or initialized.' },
  SC_MCP_PROTOCOL: { exit: EXIT.error, summary: 'An external MCP server broke a wire limit or rule; its connection was closed.' },
  SC_MCP_CATALOG_INVALID: { exit: EXIT.error, summary: "An external MCP server's tool catalog breaks a catalog limit (size, pages, cursors, duplicate names)." },
  SC_MCP_CATALOG_CHANGED: { exit: EXIT.error, summary: "An external server's tool catalog differs from the one pinned with its grant; review it with mcp tools ID and accept it with --accept HASH." },
  SC_MCP_CATALOG_UNREVIEWED: { exit: EXIT.error, summary: "No tool catalog of an external server has been reviewed for this project; mcp enable or mcp tools ID --refresh reads and pins it in front of you." },
  SC_MCP_CALL_FAILED: { exit: EXIT.error, summary: 'An external MCP tool call failed at the protocol level (not a tool error result).' },
  SC_MCP_SESSION_EXPIRED: { exit: EXIT.error, summary: 'An external Streamable HTTP server no longer knows its legacy session; the request failed, was not repeated, and the connection was closed.' },
  SC_DEF_CHANGED: { exit: EXIT.error, summary: 'A definition file changed since the task started or since the approval was asked.' },
  SC_TICKET_REFUSED: { exit: EXIT.error, summary: 'An executor was reached without a gate ticket for exactly its operation; nothing was done. This is a bug.' },
  SC_INTERNAL: { exit: EXIT.error, summary: 'An internal invariant failed; this is a bug.' },
} as const satisfies Record<string, { exit: number; summary: string }>;

export type ErrorCode = keyof typeof ERRORS;

export function isErrorCode(code: string): code is ErrorCode {
  return Object.hasOwn(ERRORS, code);
}

export class ScError extends Error {
  override readonly name = 'ScError';
  readonly code: ErrorCode;
  readonly detail: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, detail?: Record<string, unknown>) {
    super(message);
    this.code = code;
    this.detail = detail;
  }

  get exitCode(): number {
    return ERRORS[this.code].exit;
  }

  toJSON(): { error: { code: ErrorCode; message: string; detail?: Record<string, unknown>; decision_id?: string } } {
    const out: { code: ErrorCode; message: string; detail?: Record<string, unknown>; decision_id?: string } = {
      code: this.code,
      message: this.message,
    };
    if (this.detail !== undefined) {
      const { decision_id, ...rest } = this.detail;
      if (typeof decision_id === 'string') out.decision_id = decision_id;
      if (Object.keys(rest).length) out.detail = rest;
    }
    return { error: out };
  }
}

/** The gate decision an error carries (a refusal's), as a field to pass on: `{decision_id}` or nothing. */
export function decisionOf(err: unknown): { decision_id?: string } {
  const id = err instanceof ScError ? err.detail?.decision_id : undefined;
  return typeof id === 'string' ? { decision_id: id } : {};
}

/** Anything thrown becomes an ScError; unknown failures are internal and keep only their message. */
export function asScError(err: unknown): ScError {
  if (err instanceof ScError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new ScError('SC_INTERNAL', message);
}
