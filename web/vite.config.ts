// The web app's build (npm run build:web): web/ → dist/web, hashed files under assets/.
import react from '@vitejs/plugin-react';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { defineConfig, type Plugin } from 'vite';

const here = fileURLToPath(new URL('.', import.meta.url));
const outDir = join(here, '..', 'dist', 'web');
/** The JavaScript a first visit loads, gzipped. */
const FIRST_LOAD_BUDGET_BYTES = 250 * 1024;

/** Prints the gzipped size of the JavaScript index.html loads, and fails the build past the budget. */
function firstLoadSize(): Plugin {
  return {
    name: 'mailroom-first-load-size',
    apply: 'build',
    writeBundle(_options, bundle) {
      const html = readFileSync(join(outDir, 'index.html'), 'utf8');
      const scripts = [...html.matchAll(/(?:src|href)="\/(assets\/[^"]+\.js)"/g)].map((m) => m[1] ?? '');
      const bytes = scripts.reduce((sum, file) => sum + gzipSync(readFileSync(join(outDir, file))).length, 0);
      const kb = (bytes / 1024).toFixed(1);
      console.log(`web: first-load JS ${kb} KB gzipped (${scripts.length} file(s), budget ${FIRST_LOAD_BUDGET_BYTES / 1024} KB; ${Object.keys(bundle).length} files in dist/web)`);
      if (bytes > FIRST_LOAD_BUDGET_BYTES) throw new Error(`first-load JS ${kb} KB gzipped is over the budget`);
    },
  };
}

export default defineConfig({
  root: here,
  base: '/',
  plugins: [react(), firstLoadSize()],
  // assetsInlineLimit 0: the favicon stays a file under assets/ (the app's CSP and caching cover it there), not a data: URL.
  // pdf-preview.html is a page of its own, framed only to preview a PDF (decision 763): the app never loads its script.
  build: {
    outDir, emptyOutDir: true, sourcemap: false, reportCompressedSize: true, assetsInlineLimit: 0,
    rollupOptions: { input: { index: join(here, 'index.html'), 'pdf-preview': join(here, 'pdf-preview.html') } },
  },
  server: { proxy: { '/app/api': 'http://127.0.0.1:8080' } },
});
