import {cp, mkdir, mkdtemp, readdir, readFile, rm} from 'node:fs/promises';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {createContext, runInContext} from 'node:vm';
import {afterAll, beforeAll, describe, expect, test} from 'vitest';
import tsupConfig from '../../tsup.config.js';
import {installFromTarball, ROOT, run, type PackageJson, type Run} from './scratch-app.js';

// The package as a user gets it: packed by `npm pack` (which builds it), installed from the
// tarball into an app in a temporary folder, and used there, with nothing of this repository
// in reach but the TypeScript compiler and the linters.

interface Conditions {
	types: string;
	default: string;
}

const manifest = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as {
	name: string;
	bin: Record<string, string>;
	peerDependencies: Record<string, string>;
	exports: Record<string, string | {import: Conditions; require: Conditions}>;
};

/** Every entry point in package.json's `exports`: its specifier, and the source tsup builds it from. */
const entryPoints = Object.entries(manifest.exports).flatMap(([subpath, target]) => {
	if (typeof target === 'string') return [];
	const built = /^\.\/dist\/(?<name>[\w/-]+)\.js$/.exec(target.import.default)?.groups?.name;
	return [{specifier: manifest.name + subpath.slice(1), built, target}];
});

if (typeof tsupConfig === 'function' || Array.isArray(tsupConfig) || Array.isArray(tsupConfig.entry)) throw new TypeError('Expected tsup.config.ts to name its entries in one object');
/** tsup's entries: the name of a built file, and its source. */
const tsupEntries: Record<string, string> = tsupConfig.entry ?? {};

/**
 * What the user's app has besides sendonce: the frameworks, React's types (Vue ships its own),
 * axios, which sendonce/axios loads, and Kysely, which sendonce/server/kysely loads (the ky and
 * TanStack Query entries import only their types).
 */
const FRAMEWORKS = ['react', 'vue', '@types/react', 'axios', 'kysely'];

let temporary: string;
let tarball: string;
let app: string;
let packedFiles: string[];

beforeAll(async () => {
	temporary = await mkdtemp(join(tmpdir(), 'sendonce-package-'));
	// Without a dist/ to start from, the tarball holds code only if `prepack` built it.
	await rm(join(ROOT, 'dist'), {recursive: true, force: true});
	const pack = await run('npm', ['pack', '--json', '--pack-destination', temporary], ROOT);
	expect(pack.code, pack.stderr).toBe(0);
	// The build's own output comes first; npm's JSON report is the last thing printed.
	const report = JSON.parse(pack.stdout.slice(pack.stdout.search(/^\[$(?![\s\S]*^\[$)/m))) as Array<{filename: string; files: Array<{path: string}>}>;
	tarball = join(temporary, report[0]!.filename);
	packedFiles = report[0]!.files.map(file => file.path).sort();

	app = join(temporary, 'app');
	await mkdir(app);
	await cp(join(ROOT, 'test/package/app'), app, {recursive: true});
	const manifestInTarball = await run('tar', ['-xzOf', tarball, 'package/package.json'], temporary);
	const packed = JSON.parse(manifestInTarball.stdout) as PackageJson;
	const install = await installFromTarball(app, tarball, packed, FRAMEWORKS);
	expect(install.code, install.stderr).toBe(0);
});

afterAll(async () => {
	if (temporary) await rm(temporary, {recursive: true, force: true});
});

describe.concurrent('the tarball', () => {
	test('holds the built entry points, their types, README, LICENSE and CHANGELOG, and nothing else', () => {
		const named = entryPoints.flatMap(({target}) => [target.import.types, target.import.default, target.require.types, target.require.default]);
		for (const file of named) expect(packedFiles, `package.json names ${file}`).toContain(file.slice(2));
		expect(packedFiles).toEqual(expect.arrayContaining(['package.json', 'README.md', 'LICENSE', 'CHANGELOG.md']));
		// No source maps (they would point at sources the package does not ship), tests or benchmarks.
		const unexpected = packedFiles.filter(file => !/^(?:package\.json|README\.md|LICENSE|CHANGELOG\.md|dist\/(?:server\/)?[\w-]+\.(?:js|cjs|d\.ts|d\.cts)|dist\/sw\.global\.js)$/.test(file));
		expect(unexpected).toEqual([]);
	});

	test('is one tsup entry per entry point in exports, and one per bin', () => {
		const bins = Object.values(manifest.bin).map(file => /^\.\/dist\/(?<name>[\w/-]+)\.js$/.exec(file)?.groups?.name);
		expect(Object.keys(tsupEntries).sort()).toEqual([...entryPoints.map(({built}) => built), ...bins].sort());
	});

	test('passes publint, warnings and suggestions included', async () => {
		const publint = await run(join(ROOT, 'node_modules/.bin/publint'), ['run', tarball, '--strict', '--level', 'suggestion'], ROOT);
		expect(publint.code, publint.stdout + publint.stderr).toBe(0);
		expect(publint.stdout).toContain('All good!');
	});

	test('passes Are the Types Wrong for node16 (ESM and CJS) and bundlers', async () => {
		// The node16 profile checks node16 from ESM, node16 from CJS and bundler resolution; only
		// node10, which knows no `exports`, is left out.
		const attw = await run(join(ROOT, 'node_modules/.bin/attw'), [tarball, '--profile', 'node16', '--format', 'json'], ROOT);
		expect(attw.code, attw.stdout + attw.stderr).toBe(0);
		const {analysis} = JSON.parse(attw.stdout) as {analysis: {entrypoints: Record<string, unknown>; problems: Array<{resolutionKind?: string}>}};
		expect(Object.keys(analysis.entrypoints).sort()).toEqual(Object.keys(manifest.exports).sort());
		expect(analysis.problems.filter(problem => problem.resolutionKind !== 'node10')).toEqual([]);
	});
});

describe.concurrent('installed in an app', () => {
	/** The names each entry point exports, loaded in the app with `import()` (ESM) or `require` (CJS). */
	const names = async (format: 'esm' | 'cjs'): Promise<Run> => {
		const load = format === 'esm' ? 'await import(specifier)' : 'require(specifier)';
		const script = `const names = {};
			for (const specifier of ${JSON.stringify(entryPoints.map(({specifier}) => specifier))}) names[specifier] = Object.keys(${load}).sort();
			console.log(JSON.stringify(names));`;
		return run(process.execPath, [`--input-type=${format === 'esm' ? 'module' : 'commonjs'}`, '-e', script], app);
	};

	/** The names each entry point's source exports, as tsup builds it. */
	let sourceNames: Promise<Record<string, string[]>> | undefined;
	const exportedBySource = async () => {
		sourceNames ??= (async () => {
			const expected: Record<string, string[]> = {};
			for (const {specifier, built} of entryPoints) {
				const source = built === undefined ? undefined : tsupEntries[built];
				if (source === undefined) throw new Error(`No tsup entry builds ${specifier}`);
				expected[specifier] = Object.keys(await import(join(ROOT, source)) as object).sort();
			}

			return expected;
		})();
		return sourceNames;
	};

	test.each(['esm', 'cjs'] as const)('every entry point loads (%s) with exactly the names its source exports', async format => {
		const loaded = await names(format);
		expect(loaded.code, loaded.stderr).toBe(0);
		expect(JSON.parse(loaded.stdout)).toEqual(await exportedBySource());
	});

	test('the entry points export the API the README documents', async () => {
		const exported = await exportedBySource();
		expect(exported['sendonce']).toEqual(['Intent', 'InvalidRequestError', 'KeyGenerationError', 'OutcomeUnknownError', 'RequestRefusedError', 'SendOnceError', 'StoreError', 'UnresolvedIntentError', 'createClient', 'indexedDbStore', 'isSendOnceError', 'memoryStore', 'sessionStore']);
		expect(exported['sendonce/react']).toEqual(['SendOnceProvider', 'messages', 'useIntent']);
		expect(exported['sendonce/vue']).toEqual(['messages', 'provideSendOnce', 'sendOnceKey', 'useIntent']);
		expect(exported['sendonce/react-native']).toEqual(['asyncStorageStore', 'resumeOnAppStateChange', 'sha256']);
		expect(exported['sendonce/fetch']).toEqual(['createFetch']);
		expect(exported['sendonce/ky']).toEqual(['sendonceKy']);
		expect(exported['sendonce/axios']).toEqual(['sendonceAdapter']);
		expect(exported['sendonce/tanstack-query']).toEqual(['intentMutation', 'resumeMutations']);
		expect(exported['sendonce/sw']).toEqual(['MESSAGE_TYPE', 'SEND_TYPE', 'SYNC_TAG', 'backgroundSync', 'installSendOnce']);
	});

	test('dist/sw.global.js, for a worker\'s importScripts, defines `sendonce` with what sendonce/sw exports', async () => {
		const script = await readFile(join(app, 'node_modules', manifest.name, 'dist/sw.global.js'), 'utf8');
		// A classic script's top-level `var` is a property of the worker's global scope: `self.sendonce`.
		const scope = createContext({});
		runInContext(script, scope);
		expect(Object.keys((scope as {sendonce?: object}).sendonce ?? {}).sort()).toEqual((await exportedBySource())['sendonce/sw']);
	});

	test.each(['send.mjs', 'send.cjs'])('%s sends one request, with the intent\'s key', async script => {
		const sent = await run(process.execPath, [script], app);
		expect(sent.code, sent.stderr).toBe(0);
		const {status, key, keys} = JSON.parse(sent.stdout) as {status: string; key: string; keys: string[]};
		expect(status).toBe('succeeded');
		expect(key).toMatch(/^[\da-f]{8}-[\da-f]{4}-4[\da-f]{3}-[89ab][\da-f]{3}-[\da-f]{12}$/);
		expect(keys).toEqual([key]);
	});

	test('npx sendonce check --help explains the flags and warns that it sends real requests; without --yes and a terminal it sends nothing', async () => {
		const help = await run('npx', ['--offline', 'sendonce', 'check', '--help'], app);
		expect(help.code, help.stderr).toBe(0);
		expect(help.stdout).toContain('Usage: sendonce check <url>');
		expect(help.stdout).toMatch(/WARNING: this sends real requests/);
		for (const flag of ['--json', '--header', '--concurrency', '--origin', '--as', '--json-report', '--yes']) expect(help.stdout).toContain(flag);

		const unconfirmed = await run(join(app, 'node_modules/.bin/sendonce'), ['check', 'http://127.0.0.1:9/orders'], app);
		expect(unconfirmed.code).toBe(2);
		expect(unconfirmed.stderr).toContain('pass --yes');
	});

	test.each(['bundler', 'node16'])('the README\'s snippets type-check with strict and skipLibCheck off, moduleResolution %s', async resolution => {
		const tsc = await run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', `tsconfig.${resolution}.json`], app);
		expect(tsc.stdout + tsc.stderr).toBe('');
		expect(tsc.code).toBe(0);
	});

	test('the published types import only the package\'s own files, its framework peers and Node\'s built-ins', async () => {
		const dist = join(app, 'node_modules', manifest.name, 'dist');
		const declarations = (await readdir(dist)).filter(file => /\.d\.c?ts$/.test(file));
		expect(declarations.length).toBeGreaterThanOrEqual(entryPoints.length * 2);
		const imported = new Set<string>();
		for (const file of declarations) {
			// Comments hold `@example` imports, which the compiler does not follow.
			const code = (await readFile(join(dist, file), 'utf8')).replaceAll(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
			for (const match of code.matchAll(/\bfrom\s*['"]([^'"]+)['"]|\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)|\brequire\s*\(\s*['"]([^'"]+)['"]\s*\)/g)) {
				imported.add(match[1] ?? match[2] ?? match[3]!);
			}
		}

		expect([...imported]).toEqual(expect.arrayContaining(['react', 'vue']));
		const foreign = [...imported].filter(specifier => !specifier.startsWith('./') && !specifier.startsWith('node:') && !(specifier in manifest.peerDependencies));
		expect(foreign, 'zod, ky and idb-keyval stay out of the types a user compiles').toEqual([]);
	});
});
