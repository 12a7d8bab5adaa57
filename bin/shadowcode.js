#!/usr/bin/env node
// The installed entry: dist/boot.cjs compiles the bundled CLI (with a per-user code cache) and runs it.
// CommonJS (bin/package.json says so): Node then starts without setting up its ES module
// loader, about 10 ms sooner for every command, server and engine.
require('../dist/boot.cjs').boot().run();
