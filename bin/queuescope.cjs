#!/usr/bin/env node
'use strict';
// Thin launcher: the CLI is built from core/cli/index.ts into out/main/cli.js by `npm run build`.
const { existsSync } = require('node:fs');
const { join } = require('node:path');

const built = join(__dirname, '..', 'out', 'main', 'cli.js');
if (!existsSync(built)) {
  process.stderr.write('queuescope: the CLI is not built yet: run npm run build first\n');
  process.exit(1);
}
require(built).runFromProcess();
