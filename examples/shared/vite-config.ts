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
				// As tsconfig.json's `paths`: the bindings and integrations live in their layers.
				{find: /^sendonce\/(react|vue|react-native)$/, replacement: `${source}bindings/$1.ts`},
				{find: /^sendonce\/(ky|axios|tanstack-query)$/, replacement: `${source}integrations/$1.ts`},
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
