// `npm start`: builds Queuescope and opens the desktop app.
// Electron downloads its binary on first use; where that is impossible (offline, locked-down CI
// machines) this says so and starts the same UI in the browser bridge instead (`npm run web`).
import { spawn, spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const run = (cmd, args, opts = {}) => spawnSync(cmd, args, { stdio: 'inherit', ...opts }).status ?? 1;

let electronPath = null;
try {
  electronPath = require('electron'); // resolves, downloading the binary if missing
} catch (e) {
  console.error(`\nThe Electron binary is not available here (${e instanceof Error ? e.message.split('\n')[0] : e}).`);
}

if (electronPath) {
  process.exit(run('npx', ['electron-vite', 'preview'], { shell: false }));
}

console.error('Starting Queuescope in your browser instead (the same UI and services, served on 127.0.0.1).\n');
if (run('npx', ['electron-vite', 'build']) !== 0) process.exit(1);
const child = spawn(process.execPath, ['out/main/web-server.js', ...process.argv.slice(2)], { stdio: 'inherit' });
child.on('exit', (code) => process.exit(code ?? 0));
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => child.kill(sig));
