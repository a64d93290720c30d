/*
 * The peer matrix: each library sendonce works with, the range it admits, and the version the
 * `peers-lowest` and `peers-newest` projects load at each end of it. An end that is not the
 * plain name's version is installed beside it under an npm alias (package.json devDependencies)
 * and swapped in by `project.ts` and `setup.ts`. docs/peers.md shows this table; a test compares them.
 */

/** One end of a range: the version, and the alias it is installed under when not the plain name. */
export interface End {
	version: string;
	alias?: string;
	/**
	 * Whether the end's project swaps the alias in for the plain name. Not when the default run
	 * already imports the alias itself (Express 5, AsyncStorage v3).
	 * @default alias !== undefined
	 */
	swap?: boolean;
}

export interface Peer {
	/** The name an app imports. */
	name: string;
	/**
	 * The range sendonce admits. For a package.json peer dependency it must equal that range (a
	 * test checks); for a framework that is not a peer (Express, Fastify), the docs' promise.
	 */
	range: string;
	lowest: End;
	newest: End;
	/** The test files that exercise it, run again in the project of an end that swaps it. */
	tests: string[];
	/** Packages that move with it: react-dom with react, Vue's own parts with vue. */
	with?: Array<{name: string; lowest: End; newest: End; nested?: boolean}>;
}

const serverStores = ['test/server-half/store-contract.test.ts', 'test/server-half/engines.test.ts', 'test/server-half/lost-replies.test.ts'];

export const peers: Peer[] = [
	{
		name: 'react',
		range: '>=18',
		lowest: {version: '18.0.0', alias: 'react-min'},
		newest: {version: '19.3.1'},
		with: [{name: 'react-dom', lowest: {version: '18.0.0', alias: 'react-dom-min'}, newest: {version: '19.3.1'}}],
		tests: ['test/unit/react.test.tsx', 'test/unit/react-ssr.test.ts'],
	},
	{
		name: 'vue',
		range: '>=3.3',
		lowest: {version: '3.3.0', alias: 'vue-min'},
		newest: {version: '3.5.45'},
		// vue 3.3.0 pins its own parts; whoever imports them beside vue (@vue/test-utils) gets that copy.
		with: ['@vue/server-renderer', '@vue/compiler-dom', '@vue/runtime-dom', '@vue/runtime-core', '@vue/reactivity', '@vue/shared'].map(name => ({
			name,
			lowest: {version: '3.3.0', alias: `vue-min/node_modules/${name}`},
			newest: {version: '3.5.45'},
			nested: true,
		})),
		tests: ['test/unit/vue.test.ts', 'test/unit/vue-ssr.test.ts'],
	},
	{
		name: '@react-native-async-storage/async-storage',
		range: '>=1.17',
		lowest: {version: '1.17.0', alias: 'async-storage-min'},
		// test/integration/react-native.test.ts loads v2 (the plain name) and v3 itself.
		newest: {version: '3.1.1', alias: 'async-storage-v3', swap: false},
		tests: ['test/integration/react-native.test.ts'],
	},
	{
		name: 'ky',
		// ky 2 calls a `beforeRequest` hook with one state object instead of (request, options):
		// sendonceKy's hook then throws before anything is sent.
		range: '>=1.14 <2',
		lowest: {version: '1.14.0', alias: 'ky-min'},
		newest: {version: '1.14.3'},
		tests: ['test/integration/ky.test.ts', 'test/integration/hostile-review/ky.test.ts', 'test/integration/hostile-review/ky-all.test.ts'],
	},
	{
		name: 'axios',
		range: '>=1.7',
		lowest: {version: '1.7.0', alias: 'axios-min'},
		newest: {version: '1.21.1'},
		tests: ['test/integration/axios.test.ts', 'test/integration/hostile-review/axios.test.ts'],
	},
	{
		name: '@tanstack/query-core',
		range: '>=5',
		lowest: {version: '5.0.0', alias: 'query-core-min'},
		newest: {version: '5.108.4'},
		tests: ['test/integration/tanstack-query.test.ts', 'test/integration/hostile-review/tanstack.test.ts'],
	},
	{
		name: 'redis',
		range: '>=4',
		lowest: {version: '4.0.0', alias: 'redis-min'},
		newest: {version: '6.3.1', alias: 'redis-6'},
		tests: [...serverStores, 'test/server-half/check-redis.test.ts'],
	},
	{
		name: 'ioredis',
		range: '>=5',
		lowest: {version: '5.0.0', alias: 'ioredis-min'},
		newest: {version: '6.0.0', alias: 'ioredis-6'},
		tests: [...serverStores, 'test/server-half/check-redis.test.ts'],
	},
	{
		name: 'pg',
		// pg 8.0.0 to 8.0.2 never finish connecting on Node 14 and later.
		range: '>=8.0.3',
		lowest: {version: '8.0.3', alias: 'pg-min'},
		newest: {version: '8.23.1'},
		tests: [...serverStores, 'test/server-half/transactional.test.ts'],
	},
	{
		name: 'kysely',
		range: '>=0.27',
		lowest: {version: '0.27.0', alias: 'kysely-0.27'},
		// Kysely 0.29 declares Node 22, and the tests run on Node 20 (docs/peers.md).
		newest: {version: '0.28.19'},
		tests: ['test/server-half/engines.test.ts', 'test/server-half/transactional.test.ts'],
	},
	{
		name: 'express',
		range: '>=4.17 <6',
		lowest: {version: '4.17.0', alias: 'express-min'},
		// test/server-half/adapters.test.ts loads Express 4 (the plain name) and 5 side by side.
		newest: {version: '5.3.0', alias: 'express5', swap: false},
		// The lowest Express 5, in place of the newest under the name that test gives it.
		with: [{name: 'express5', lowest: {version: '5.0.0', alias: 'express5-min'}, newest: {version: '5.3.0'}}],
		tests: ['test/server-half/adapters.test.ts'],
	},
	{
		name: 'fastify',
		range: '>=5 <6',
		lowest: {version: '5.0.0', alias: 'fastify-min'},
		newest: {version: '5.12.8'},
		tests: ['test/server-half/adapters.test.ts'],
	},
];

export type EndName = 'lowest' | 'newest';

/** Whether the project of an end loads `end` in place of the plain name. */
export const swapped = (end: End): boolean => end.alias !== undefined && end.swap !== false;

/** Every package of the matrix with its version at `end`, companions included. */
export function packagesAt(end: EndName): Array<{name: string; end: End; nested: boolean}> {
	return peers.flatMap(peer => [
		{name: peer.name, end: peer[end], nested: false},
		...(peer.with ?? []).map(part => ({name: part.name, end: part[end], nested: part.nested ?? false})),
	]);
}

/** The test files the project of `end` runs: those of every peer it swaps. */
export function testsAt(end: EndName): string[] {
	return [...new Set(peers.filter(peer => swapped(peer[end])).flatMap(peer => peer.tests))];
}
