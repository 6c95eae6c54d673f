// `npm start`: builds Queuescope and opens the desktop app.
// Electron downloads its binary on first use; where that is impossible (offline, locked-down CI
// machines) this says so in one line and starts the same UI in the browser bridge instead
// (`npm run web`), which prints the address to open.
import { spawn, spawnSync } from 'node:child_process';

const run = (cmd, args, opts = {}) => spawnSync(cmd, args, { stdio: 'inherit', ...opts }).status ?? 1;

/**
 * Resolves the Electron binary in a child process with its output captured, so a failed download
 * (stack trace, "delete node_modules/electron" advice) is not shown. Returns the binary path or null.
 */
function probeElectron() {
  console.log('Checking for the Electron binary…');
  const probe = spawnSync(process.execPath, ['-e', "process.stdout.write(String(require('electron')))"], { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8', timeout: 180_000 });
  if (probe.status !== 0) return null;
  const lines = probe.stdout.trim().split('\n');
  const path = lines[lines.length - 1]?.trim() ?? '';
  return path === '' ? null : path;
}

if (probeElectron() !== null) {
  process.exit(run('npx', ['electron-vite', 'preview'], { shell: false }));
}

console.log('The Electron binary is not available here (download failed); starting Queuescope in your browser instead…');
console.log('(The same UI and services, served on 127.0.0.1. Building first; the address to open follows.)\n');
if (run('npx', ['electron-vite', 'build']) !== 0) process.exit(1);
const child = spawn(process.execPath, ['out/main/web-server.js', ...process.argv.slice(2)], { stdio: 'inherit' });
child.on('exit', (code) => process.exit(code ?? 0));
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => child.kill(sig));
