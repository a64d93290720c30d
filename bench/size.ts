/*
 * Size budgets: what a user's bundler pays for sendonce, minified and gzipped, dependencies
 * included and framework packages left out (the app has them already). Measured with
 * size-limit and @size-limit/preset-small-lib (esbuild, gzip level 9), from the sources, with
 * every export imported. `npm run size` prints the figures and fails over budget;
 * test/unit/size.test.ts runs the same measurement from `npm test`.
 */
import {existsSync} from 'node:fs';
import {mkdtemp, rm, writeFile} from 'node:fs/promises';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {fileURLToPath} from 'node:url';
import sizeLimit from 'size-limit';
import smallLib from '@size-limit/preset-small-lib';
import {table} from './stats.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CORE = `${ROOT}src/index.ts`;

/**
 * What the issue asked of the core: 15 KiB, on the estimate that ky, idb-keyval and zod/mini
 * alone are about 11. They are (11.0 KiB measured); but the core's own code, with everything
 * SPEC.md asks of it (three stores and their probe, cross-tab claims, validation, a SHA-256
 * fallback, the retry loop and its budget), is about 12 KiB, so the target cannot be met
 * without dropping features. Reported beside the budget, not enforced.
 */
export const CORE_TARGET = 15 * 1024;

/**
 * Minified + gzipped bytes each entry may cost: a guard against growth, set just above what the
 * entries measure. A binding's budget is what it adds to the core. The core's grew by 2.5 KiB
 * with the fixes of issue 10 (request validation, strict Retry-After dates, store migration,
 * signals per caller) and the CORS checks of issue 11, and the bindings by the copy that says
 * what happened (`messages.because`); the lean-core issue brings them down to its targets.
 */
export const BUDGETS = {core: 26.5 * 1024, react: 1.5 * 1024, vue: 1.75 * 1024, 'react-native': 0.5 * 1024} as const;

/** The subpath entries besides the core, measured when their source exists. */
const BINDINGS = ['react', 'vue', 'react-native'] as const;
type Binding = typeof BINDINGS[number];

function budgetOf(binding: Binding): number {
	return BUDGETS[binding];
}

/** Optional peers: never bundled, never counted. */
const FRAMEWORKS = ['react', 'react/*', 'react-dom', 'react-dom/*', 'vue', 'react-native', '@react-native-async-storage/async-storage'];

/** The runtime dependencies, as esbuild's `external` patterns. */
const DEPENDENCIES: Record<string, string[]> = {
	ky: ['ky', 'ky/*'],
	'idb-keyval': ['idb-keyval', 'idb-keyval/*'],
	'zod (zod/mini)': ['zod', 'zod/*'],
};

interface Check {
	/** What size-limit's CLI resolves from `path`; replaced by the generated entry. */
	files: string[];
	import: Record<string, string>;
	gzip: true;
	ignore: string[];
	size?: number;
	esbuildMetafile?: {outputs: Record<string, {bytes: number; inputs: Record<string, {bytesInOutput: number}>}>};
}

export interface Part {
	name: string;
	/** Minified bytes it puts in the core's bundle. */
	minified: number;
	/** Gzipped bytes the core loses without it (own code: the core with every dependency external). */
	gzip: number;
}

export interface SizeReport {
	/** `import * from 'sendonce'`, minified + gzipped. */
	core: number;
	coreMinified: number;
	/** Own code, then each dependency. */
	parts: Part[];
	/** Minified bytes of each of our own files in the core's bundle, largest first. */
	files: Array<{name: string; minified: number}>;
	/** Each binding whose source exists: with the core, and what it adds to the core. */
	bindings: Array<{name: Binding; combined: number; onTop: number; budget?: number}>;
	/** `sendonce/react`, when src/react.ts exists. */
	react?: {combined: number; onTop: number};
}

/** `import * as all from entry`, as size-limit writes it for `import: '*'`. */
function check(entry: string, ignore: string[] = []): Check {
	return {files: [entry], import: {[entry]: '*'}, gzip: true, ignore: [...FRAMEWORKS, ...ignore]};
}

/** Which package (or `src`) an input of esbuild's metafile belongs to. */
function owner(input: string): string | undefined {
	const match = /node_modules\/((?:@[^/]+\/)?[^/]+)\/[^]*$/.exec(input.slice(input.lastIndexOf('node_modules/')));
	if (match) return match[1];
	return /(?:^|\/)src\//.test(input) ? 'src' : undefined;
}

/** Measures every entry; exact and deterministic for a given tree and esbuild version. */
export async function measureSizes(): Promise<SizeReport> {
	const core = check(CORE);
	const own = check(CORE, Object.values(DEPENDENCIES).flat());
	const without = Object.fromEntries(Object.entries(DEPENDENCIES).map(([name, patterns]) => [name, check(CORE, patterns)]));
	// size-limit names every `*` import `all`, so two entries in one check clash: re-export both from one file.
	const present = BINDINGS.filter(name => existsSync(`${ROOT}src/${name}.ts`));
	const directory = await mkdtemp(join(tmpdir(), 'sendonce-size-'));
	const withCore = new Map<Binding, Check>();
	try {
		for (const name of present) {
			const entry = join(directory, `${name}.ts`);
			await writeFile(entry, `export * from ${JSON.stringify(CORE)};\nexport * from ${JSON.stringify(`${ROOT}src/${name}.ts`)};\n`);
			withCore.set(name, check(entry));
		}

		await sizeLimit(smallLib as Array<() => unknown>, {checks: [core, own, ...Object.values(without), ...withCore.values()]});
	} finally {
		await rm(directory, {recursive: true, force: true});
	}

	const minified = new Map<string, number>();
	const files: SizeReport['files'] = [];
	let coreMinified = 0;
	for (const output of Object.values(core.esbuildMetafile?.outputs ?? {})) {
		coreMinified += output.bytes;
		for (const [input, {bytesInOutput}] of Object.entries(output.inputs)) {
			const name = owner(input);
			if (name) minified.set(name, (minified.get(name) ?? 0) + bytesInOutput);
			if (name === 'src') files.push({name: input.slice(input.lastIndexOf('src/')), minified: bytesInOutput});
		}
	}

	files.sort((a, b) => b.minified - a.minified);

	const coreSize = core.size!;
	const bindings = [...withCore].map(([name, measured]) => {
		const budget = budgetOf(name);
		return {name, combined: measured.size!, onTop: measured.size! - coreSize, ...(budget === undefined ? {} : {budget})};
	});
	const react = bindings.find(binding => binding.name === 'react');
	return {
		core: coreSize,
		coreMinified,
		parts: [
			{name: 'own code (src/)', minified: minified.get('src') ?? 0, gzip: own.size!},
			...Object.entries(without).map(([name, measured]) => ({name, minified: minified.get(name.split(' ')[0]!) ?? 0, gzip: coreSize - measured.size!})),
		],
		files,
		bindings,
		...(react ? {react: {combined: react.combined, onTop: react.onTop}} : {}),
	};
}

export function kib(bytes: number): string {
	return `${(bytes / 1024).toFixed(2)} KiB`;
}

function verdict(size: number, budget: number): string {
	return size <= budget ? `ok (${kib(budget - size)} to spare)` : `**over by ${kib(size - budget)}** (${(size - budget).toLocaleString('en-US')} B)`;
}

/** The figures as Markdown tables: entries against their budgets, then the core's parts. */
export function formatSizes(report: SizeReport): string {
	const bytes = (size: number) => `${kib(size)} (${size.toLocaleString('en-US')} B)`;
	const entries = table(['entry', 'minified + gzipped', 'budget', 'verdict'], [
		['`sendonce` (every export)', bytes(report.core), kib(BUDGETS.core), verdict(report.core, BUDGETS.core)],
		['`sendonce`, against the 15 KiB target', '', kib(CORE_TARGET), verdict(report.core, CORE_TARGET)],
		...(report.react ? [] : [['`sendonce/react`', 'src/react.ts does not exist yet', kib(BUDGETS.react), '–']]),
		...report.bindings.flatMap(binding => [
			[`\`sendonce/${binding.name}\`, on top of the core`, bytes(binding.onTop), binding.budget === undefined ? 'none set' : kib(binding.budget), binding.budget === undefined ? '–' : verdict(binding.onTop, binding.budget)],
			[`\`sendonce\` + \`sendonce/${binding.name}\``, bytes(binding.combined), binding.budget === undefined ? '' : kib(BUDGETS.core + binding.budget), binding.budget === undefined ? '' : verdict(binding.combined, BUDGETS.core + binding.budget)],
		]),
	], ['l', 'r', 'r', 'l']);
	const parts = table(['part of `sendonce`', 'minified', 'share', 'gzipped'], [
		...report.parts.map(part => [part.name, `${part.minified.toLocaleString('en-US')} B`, `${((part.minified / report.coreMinified) * 100).toFixed(0)} %`, `${kib(part.gzip)}`]),
		['whole bundle', `${report.coreMinified.toLocaleString('en-US')} B`, '100 %', kib(report.core)],
	], ['l', 'r', 'r', 'r']);
	const shown = report.files.slice(0, 10);
	const rest = report.files.slice(10).reduce((total, file) => total + file.minified, 0);
	const files = table(['own file', 'minified'], [
		...shown.map(file => [`\`${file.name}\``, `${file.minified.toLocaleString('en-US')} B`]),
		...(rest > 0 ? [[`${report.files.length - shown.length} other files`, `${rest.toLocaleString('en-US')} B`]] : []),
	], ['l', 'r']);
	return `${entries}\n\n${parts}\n\n${files}\n\nGzipped per part: own code = the core bundled with every dependency external; a dependency = what the core loses when that dependency is external (gzip is not additive, so the parts do not sum exactly to the whole).`;
}

/** Whether every budget holds. */
export function withinBudgets(report: SizeReport): boolean {
	return report.core <= BUDGETS.core && report.bindings.every(binding => binding.budget === undefined || binding.onTop <= binding.budget);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
	const report = await measureSizes();
	console.log('Size budgets: minified + gzipped (size-limit, esbuild, gzip -9), every export imported, dependencies included, framework peers (react, vue, react-native, AsyncStorage) external.\n');
	console.log(formatSizes(report));
	if (!withinBudgets(report)) {
		console.error('\nOver budget.');
		process.exitCode = 1;
	}
}
