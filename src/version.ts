/*
 * Versions that status and the MCP server report. The build stamps the package
 * version in; from source (tests) it is read from package.json.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from './util/paths.js';

declare const __SHADOWCODE_VERSION__: string | undefined;

export const VERSION: string =
  typeof __SHADOWCODE_VERSION__ === 'string'
    ? __SHADOWCODE_VERSION__
    : (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;

/** The stateless 2026 revision: its calls are the ones taken past the SDK when plain (server/call-shapes.ts, client/fast-calls.ts). */
export const MODERN_REVISION = '2026-07-28';
/** The MCP revisions `mcp serve` answers: the stateless 2026 revision first, then the 2025 legacy ones. */
export const PROTOCOL_REVISIONS: readonly string[] = [MODERN_REVISION, '2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05', '2024-10-07'];
