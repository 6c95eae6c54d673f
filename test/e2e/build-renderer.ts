/**
 * Builds only the renderer into out/renderer, with the settings electron.vite.config.ts uses for it
 * (root `renderer/`, relative base, React plugin). For e2e runs while another target of the full
 * `npm run build` does not build. Usage: `npx tsx test/e2e/build-renderer.ts`.
 */
import { resolve } from 'node:path';
import { build } from 'vite';
import react from '@vitejs/plugin-react';

const root = resolve(__dirname, '../..');

export async function buildRenderer(outDir = resolve(root, 'out/renderer')): Promise<void> {
  await build({
    root: resolve(root, 'renderer'),
    base: './',
    configFile: false,
    logLevel: 'warn',
    plugins: [react()],
    build: { outDir, emptyOutDir: true, modulePreload: { polyfill: false }, rolldownOptions: { input: resolve(root, 'renderer/index.html') } },
  });
}

if (require.main === module) {
  buildRenderer().then(
    () => console.log('renderer built into out/renderer'),
    (e: unknown) => {
      console.error(e);
      process.exit(1);
    },
  );
}
