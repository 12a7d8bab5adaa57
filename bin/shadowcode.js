#!/usr/bin/env node
// The installed entry: dist/boot.cjs compiles the bundled CLI (with a per-user code cache) and runs it.
import { createRequire } from 'node:module';

createRequire(import.meta.url)('../dist/boot.cjs').boot().run();
