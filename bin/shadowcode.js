#!/usr/bin/env node
// The installed entry: load the bundled CLI and run it.
import('../dist/cli.js').then((m) => m.run());
