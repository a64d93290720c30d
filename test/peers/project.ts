/*
 * The `peers-lowest` and `peers-newest` Vitest projects: the tests of each peer in `matrix.ts`,
 * run again with that peer's other end swapped in for its plain name. Vite's aliases swap what
 * Vite loads (sendonce's sources, the tests, and the libraries inlined below); `setup.ts` swaps
 * what Node's `require` loads (react-dom requiring react, @vue/server-renderer requiring vue).
 */
import {dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';
import type {TestProjectInlineConfiguration} from 'vitest/config';
import {packagesAt, swapped, testsAt, type EndName} from './matrix.js';

declare module 'vitest' {
	export interface ProvidedContext {
		/** Which end of every peer range the project loads. */
		peerEnd: EndName;
	}
}

// A string, not a URL: in happy-dom's environment `URL` is happy-dom's, which Node refuses.
const nodeModules = join(dirname(fileURLToPath(import.meta.url)), '../../node_modules');

/** Each swapped name, with the folder of the package loaded in its place. */
export function swapsAt(end: EndName): Array<[name: string, folder: string]> {
	return packagesAt(end).filter(entry => swapped(entry.end)).map(entry => [entry.name, join(nodeModules, entry.end.alias!)]);
}

const escape = (text: string) => text.replaceAll(/[.*+?^${}()|[\]\\/]/g, '\\$&');

export function peerProject(end: EndName): TestProjectInlineConfiguration {
	return {
		resolve: {
			// The name alone or with a subpath (`react/jsx-runtime`), never a longer name (`react-dom`).
			alias: swapsAt(end).map(([name, folder]) => ({find: new RegExp(`^${escape(name)}(?=/|$)`), replacement: folder})),
		},
		test: {
			name: `peers-${end}`,
			include: ['test/peers/loaded.test.ts', ...testsAt(end)],
			environment: 'node',
			provide: {peerEnd: end},
			setupFiles: ['test/peers/setup.ts'],
			globalSetup: ['test/server-half/services.ts'],
			// Libraries that import a swapped peer go through Vite, so that they get the swapped one.
			server: {deps: {inline: ['@testing-library/react', '@vue/test-utils']}},
			testTimeout: 20_000,
			hookTimeout: 20_000,
		},
	};
}
