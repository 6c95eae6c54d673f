import { resolve } from 'node:path';
import { defineConfig } from 'electron-vite';
import react from '@vitejs/plugin-react';

/**
 * One build for the three Electron targets and the CLI:
 * - main: electron/main (window + IPC) and core/cli (the `queuescope` CLI, plain Node, no electron)
 * - preload: electron/preload, CommonJS because the window is sandboxed
 * - renderer: renderer/ (React)
 */
export default defineConfig({
  main: {
    build: {
      rolldownOptions: {
        input: {
          index: resolve(__dirname, 'electron/main/index.ts'),
          cli: resolve(__dirname, 'core/cli/index.ts'),
          'web-server': resolve(__dirname, 'core/web/server.ts'),
        },
      },
    },
  },
  preload: {
    build: {
      rolldownOptions: {
        input: { index: resolve(__dirname, 'electron/preload/index.ts') },
        output: { format: 'cjs' },
      },
    },
  },
  renderer: {
    root: resolve(__dirname, 'renderer'),
    build: {
      rolldownOptions: { input: { index: resolve(__dirname, 'renderer/index.html') } },
    },
    plugins: [react()],
  },
});
