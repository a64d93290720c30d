/*
 * What developers need and users never see (long messages, checks of the client's options) sits
 * in src/ behind `process.env.NODE_ENV !== 'production'`, the convention of React and Vue: an
 * app's bundler defines `process.env.NODE_ENV` for a production build, and its minifier drops
 * what the condition then rules out.
 *
 * Where nothing defines it and there is no `process` (a browser loading dist/ as it is, a service
 * worker, Deno, Hermes), a bare `process.env.NODE_ENV` would throw a ReferenceError. So dist/ is
 * built with each reading guarded, `(typeof process < 'u' ? process.env.NODE_ENV : 'production')`:
 * without `process` it reads `'production'`, and once a bundler defines `process.env.NODE_ENV`
 * the guard is `typeof process < 'u' ? 'production' : 'production'`, which esbuild, Rollup's and
 * Vite's minifiers and terser fold, in place, with no constant to carry across modules.
 * bench/size.ts measures the sources built the same way.
 */
import {readFile} from 'node:fs/promises';
import {fileURLToPath} from 'node:url';
import type {Plugin} from 'esbuild';

const SRC = fileURLToPath(new URL('../src/', import.meta.url));

/** The guarded reading that replaces `process.env.NODE_ENV` in what is built from src/. */
export const GUARDED_NODE_ENV = '(typeof process < \'u\' ? process.env.NODE_ENV : \'production\')';

/** An esbuild (and tsup) plugin: guards every `process.env.NODE_ENV` in src/. */
export const devOnly: Plugin = {
	name: 'sendonce-dev-only',
	setup(build) {
		build.onLoad({filter: /\.tsx?$/}, async ({path}) => {
			if (!path.startsWith(SRC)) return undefined;
			const source = await readFile(path, 'utf8');
			if (!source.includes('process.env.NODE_ENV')) return undefined;
			return {contents: source.replaceAll('process.env.NODE_ENV', GUARDED_NODE_ENV), loader: path.endsWith('x') ? 'tsx' : 'ts'};
		});
	},
};
