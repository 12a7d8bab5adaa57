/*
 * The entry of dist/vendor.cjs: the packages the CLI bundle (dist/cli.cjs) does not carry
 * itself, each started only when first required.
 *
 *   dist/cli.cjs ─► require('@modelcontextprotocol/server') ─► boot's require (src/boot.ts)
 *     ─► first use: compile dist/vendor.cjs (own code cache) ─► VENDOR[id]() ─► the package
 *
 * They are a third of the CLI's code and none of it is needed before `mcp serve` has given
 * its first answers (src/server/stdio-first.ts), nor by most commands: every launch read
 * and deserialised them anyway. scripts/build.mjs builds this file from the packages' ES
 * module builds, as the CLI bundle did, and checks that every package the CLI bundle leaves
 * out is listed here. One instance of each package for the whole process: the CLI bundle
 * gets these very modules.
 */
export const VENDOR: Readonly<Record<string, () => unknown>> = {
  '@modelcontextprotocol/server': () => require('@modelcontextprotocol/server'),
  '@modelcontextprotocol/server/stdio': () => require('@modelcontextprotocol/server/stdio'),
  '@modelcontextprotocol/client': () => require('@modelcontextprotocol/client'),
  yaml: () => require('yaml'),
};
