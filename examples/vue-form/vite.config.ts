import {fileURLToPath} from 'node:url';
import vue from '@vitejs/plugin-vue';
import {defineConfig} from 'vite';

const source = fileURLToPath(new URL('../../src/', import.meta.url));

// Builds the example from the repository's own source: `sendonce` and `sendonce/<entry>`
// resolve to src/, so the demo runs without publishing (or building) the package.
export default defineConfig({
	root: fileURLToPath(new URL('.', import.meta.url)),
	base: '/',
	plugins: [vue()],
	resolve: {
		alias: [
			{find: /^sendonce$/, replacement: `${source}index.ts`},
			{find: /^sendonce\/(.+)$/, replacement: `${source}$1.ts`},
		],
	},
	build: {
		outDir: 'dist',
		emptyOutDir: true,
		sourcemap: true,
	},
	logLevel: 'warn',
});
