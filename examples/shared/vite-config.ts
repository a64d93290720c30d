import {fileURLToPath} from 'node:url';
import {defineConfig, type PluginOption, type UserConfig} from 'vite';

const source = fileURLToPath(new URL('../../src/', import.meta.url));

/**
 * An example's Vite config, built from the repository's own source: `sendonce` and
 * `sendonce/<entry>` resolve to src/, so the demo runs without publishing (or building) the
 * package.
 */
export function exampleConfig(root: URL, plugin: PluginOption): UserConfig {
	return defineConfig({
		root: fileURLToPath(root),
		base: '/',
		plugins: [plugin],
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
}
