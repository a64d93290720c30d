import {fileURLToPath} from 'node:url';
import {bundleForBrowser} from '../test/browser/global-setup.js';
import type {Browser, Page} from 'playwright-core';
import {launchBrowser} from '../test/browser/harness.js';
import {mean, median, spread, type Spread} from './stats.js';
import type {BenchServer} from './server.js';

export {launchBrowser};

const HTML = `<!doctype html>
<html>
<head>
<meta charset="utf-8">
<link rel="icon" href="data:,">
<title>sendonce bench</title>
<script type="module" src="/bench.js"></script>
</head>
<body></body>
</html>
`;

/**
 * `page.ts` with sendonce (src/index.ts) and ky, bundled as one ES module with the options
 * the browser tests use (test/browser/global-setup.ts).
 */
let bundled: Promise<string> | undefined;
async function pageBundle(): Promise<string> {
	bundled ??= bundlePage();
	return bundled;
}

async function bundlePage(): Promise<string> {
	return bundleForBrowser(fileURLToPath(new URL('page.ts', import.meta.url)));
}

/** A fresh contract server that also serves the bench page at `/`; resolves to its URL. */
export async function openSite(server: BenchServer): Promise<string> {
	const script = await pageBundle();
	return server.open({
		site: {
			'/': {type: 'text/html; charset=utf-8', body: HTML},
			'/bench.js': {type: 'text/javascript; charset=utf-8', body: script},
		},
	});
}

/** A page (in a fresh context: its own IndexedDB and sessionStorage) with `window.bench` ready. */
export async function benchPage(browser: Browser, url: string): Promise<Page> {
	const context = await browser.newContext();
	const page = await context.newPage();
	await load(page, url);
	return page;
}

async function load(page: Page, url?: string): Promise<void> {
	await (url ? page.goto(`${url}/`) : page.reload());
	await page.waitForFunction(() => typeof window.bench === 'object');
}

export interface BrowserOverheadRow {
	name: string;
	label: string;
	intents: number;
	median: number;
	mean: number;
}

const LABELS: Record<string, string> = {
	'sendonce-send-indexeddb': 'sendonce client.send(), IndexedDB store',
	'sendonce-indexeddb': 'sendonce intent() + send(), IndexedDB store',
	'sendonce-session': 'sendonce, sessionStorage store',
	ky: 'ky.post with an Idempotency-Key',
	fetch: 'fetch with an Idempotency-Key',
};

export interface BrowserOverhead {
	rows: BrowserOverheadRow[];
	/** IndexedDB transactions per `client.send()`. */
	transactions: {readonly: number; readwrite: number};
	/** `client.send()` with IndexedDB over ky and over fetch: each round's medians. */
	ratio: {ky: Spread; fetch: Spread};
	rounds: number;
}

/**
 * Per-intent cost in the page, each way of sending in alternating blocks, `rounds` times in a
 * fresh page (its own IndexedDB) each: the rows pool every round, the ratios spread over them.
 */
export async function browserOverhead(browser: Browser, url: string, {intents, warmup, rounds, block = 50}: {intents: number; warmup: number; rounds: number; block?: number}): Promise<BrowserOverhead> {
	const pooled: Record<string, number[]> = {};
	const ratios = {ky: [] as number[], fetch: [] as number[]};
	const transactions = {readonly: 0, readwrite: 0};
	for (let round = 0; round < rounds; round++) {
		const page = await benchPage(browser, url);
		try {
			const measured = await page.evaluate(async options => window.bench.overhead(options), {count: Math.ceil(intents / rounds), warmup, block});
			for (const [name, values] of Object.entries(measured.times)) (pooled[name] ??= []).push(...values);
			const send = median(measured.times['sendonce-send-indexeddb']!);
			ratios.ky.push(send / median(measured.times['ky']!));
			ratios.fetch.push(send / median(measured.times['fetch']!));
			transactions.readonly += measured.transactions.readonly / rounds;
			transactions.readwrite += measured.transactions.readwrite / rounds;
		} finally {
			await page.context().close();
		}
	}

	const rows = Object.entries(pooled).map(([name, values]) => ({name, label: LABELS[name] ?? name, intents: values.length, median: median(values), mean: mean(values)}));
	return {rows, transactions, ratio: {ky: spread(ratios.ky), fetch: spread(ratios.fetch)}, rounds};
}

import {RESUME_CONCURRENCY} from '../src/core/client.js';

/** How many intents `client.resume()` sends at once. */
export {RESUME_CONCURRENCY};

export interface ScaleRow {
	stored: number;
	/** A plain read of every key and value in the object store. */
	rawRead: number;
	/** `client.list()`: the read, validation of every record, an Intent per record (median over rounds). */
	list: number;
	listSpread: Spread;
	/** `client.resume()` with a fetch that answers at once: list, then per intent storage and orchestration (measured when asked to decompose). */
	resumeInstant?: number;
	/** `client.resume()` sending every intent to the local contract server (median over rounds). */
	resume: number;
	/** The same number of plain POSTs, as many at once as resume() sends, right after each resume(): the network's share. */
	posts: number;
	/** resume() over the plain POSTs of the same round. */
	ratio: Spread;
	/** IndexedDB transactions per intent during the real resume. */
	transactions: {readonly: number; readwrite: number};
	/** Outcomes of the real resume, and the server's count of effects (the last round). */
	succeeded: number;
	effects: number;
	/** Records left in the store after the real resume (the last round). */
	left: number;
	/** Where the renderer's time went during the real resume (when asked to decompose). */
	profile?: ResumeProfile;
}

/**
 * `list()` and `resume()` over `count` intents seeded straight into IndexedDB, and as many
 * plain POSTs at resume()'s concurrency right after each resume, `rounds` times; with
 * `decompose`, also resume() without a network and a CPU profile of the first real resume, to
 * split its time. Every step runs in a freshly loaded page, so no client of an earlier step is
 * listening.
 */
export async function scale(browser: Browser, server: BenchServer, count: number, {rounds = 1, decompose = false} = {}): Promise<ScaleRow> {
	const url = await openSite(server);
	const page = await benchPage(browser, url);
	try {
		await page.evaluate(async count => window.bench.seed({count}), count);
		await load(page);
		const raw = await page.evaluate(async () => window.bench.rawRead());
		if (raw.count !== count) throw new Error(`seeded ${count} intents, found ${raw.count}`);
		let instant: number | undefined;
		if (decompose) {
			await load(page);
			const resumed = await page.evaluate(async () => window.bench.resume({instant: true}));
			if (resumed.outcomes['succeeded'] !== count) throw new Error(`resume() without network: ${JSON.stringify(resumed.outcomes)}`);
			instant = resumed.ms;
		}

		const lists: number[] = [];
		const resumes: number[] = [];
		const posts: number[] = [];
		let profile: ResumeProfile | undefined;
		let last: Awaited<ReturnType<Window['bench']['resume']>> | undefined;
		let effects = 0;
		for (let round = 0; round < rounds; round++) {
			await page.evaluate(async count => window.bench.seed({count}), count);
			await load(page);
			const listed = await page.evaluate(async () => window.bench.list());
			if (listed.count !== count) throw new Error(`list() found ${listed.count} of ${count} intents`);
			lists.push(listed.ms);
			await load(page);
			const before = (await server.stats()).effects;
			// Sampling every 500 µs costs too little to show in the timing (checked against unprofiled runs).
			const profiler = decompose && round === 0 ? await startProfiler(page) : undefined;
			last = await page.evaluate(async () => window.bench.resume({instant: false}));
			profile = await profiler?.stop(count, last.ms) ?? profile;
			effects = (await server.stats()).effects - before;
			resumes.push(last.ms);
			await load(page);
			posts.push(await page.evaluate(async options => window.bench.posts(options), {count, concurrency: RESUME_CONCURRENCY}));
		}

		return {
			stored: count,
			rawRead: raw.ms,
			list: median(lists),
			listSpread: spread(lists),
			...(instant === undefined ? {} : {resumeInstant: instant}),
			resume: median(resumes),
			posts: median(posts),
			ratio: spread(resumes.map((resume, round) => resume / posts[round]!)),
			transactions: {readonly: last!.readonly / count, readwrite: last!.readwrite / count},
			succeeded: last!.outcomes['succeeded'] ?? 0,
			effects,
			left: last!.left,
			...(profile ? {profile} : {}),
		};
	} finally {
		await page.context().close();
	}
}

/** Milliseconds per IndexedDB transaction, one after another: the floor under a per-intent write-ahead. */
export async function transactionCost(browser: Browser, url: string, count: number): Promise<{readwrite: number; readonly: number}> {
	const page = await benchPage(browser, url);
	try {
		return await page.evaluate(async count => window.bench.transactions({count}), count);
	} finally {
		await page.context().close();
	}
}

/** Where the renderer's time went during one `resume()`: shares of the CPU profile's samples. */
export interface ResumeProfile {
	stored: number;
	ms: number;
	/** Sampled time by kind: idle (waiting for IndexedDB, locks or the network), engine, GC, JS. */
	kinds: Array<{name: string; share: number}>;
	/** JavaScript self time by source module of the bundle (native functions by name). */
	modules: Array<{name: string; share: number}>;
	/** JavaScript self time by function. */
	functions: Array<{name: string; share: number}>;
}

interface CpuProfile {
	nodes: Array<{id: number; hitCount?: number; callFrame: {functionName: string; url: string; lineNumber: number}}>;
}

/** Maps a line of the bundle to the module esbuild put there (it marks each with a `// path` comment). */
function moduleOf(script: string): (line: number) => string {
	const starts: Array<[number, string]> = [];
	script.split('\n').forEach((text, line) => {
		const match = /^\/\/ ((?:src|bench|node_modules)\/.+)$/.exec(text);
		if (match) starts.push([line, match[1]!]);
	});
	return line => {
		let found = 'bundle';
		for (const [start, name] of starts) {
			if (start > line) break;
			found = name;
		}

		const dependency = /^node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(found);
		return dependency ? dependency[1]! : found;
	};
}

/** Starts Chromium's sampling profiler in `page`; `stop()` sorts the samples into a {@link ResumeProfile}. */
async function startProfiler(page: Page): Promise<{stop(stored: number, ms: number): Promise<ResumeProfile>}> {
	const script = await pageBundle();
	const cdp = await page.context().newCDPSession(page);
	await cdp.send('Profiler.enable');
	await cdp.send('Profiler.setSamplingInterval', {interval: 500});
	await cdp.send('Profiler.start');
	return {
		async stop(stored, ms) {
			const {profile} = await cdp.send('Profiler.stop') as unknown as {profile: CpuProfile};
			await cdp.detach();
			const module = moduleOf(script);
			const kinds = new Map<string, number>();
			const modules = new Map<string, number>();
			const functions = new Map<string, number>();
			let total = 0;
			let js = 0;
			for (const node of profile.nodes) {
				const hits = node.hitCount ?? 0;
				if (hits === 0) continue;
				total += hits;
				const {functionName, url: source, lineNumber} = node.callFrame;
				const kind = functionName === '(idle)'
					? 'idle: waiting for IndexedDB, locks, the network'
					: functionName === '(program)'
						? 'browser engine (native work outside JS)'
						: functionName === '(garbage collector)' ? 'garbage collection' : 'JavaScript';
				kinds.set(kind, (kinds.get(kind) ?? 0) + hits);
				if (kind !== 'JavaScript') continue;
				js += hits;
				const name = source.endsWith('/bench.js') ? module(lineNumber) : source === '' ? `native ${functionName || '(anonymous)'}` : source;
				modules.set(name, (modules.get(name) ?? 0) + hits);
				const where = source.endsWith('/bench.js') ? `${functionName || '(anonymous)'} in ${name}` : name;
				functions.set(where, (functions.get(where) ?? 0) + hits);
			}

			const shares = (map: Map<string, number>, of: number) => [...map].map(([name, hits]) => ({name, share: hits / of})).sort((a, b) => b.share - a.share);
			return {stored, ms, kinds: shares(kinds, total), modules: shares(modules, js).slice(0, 8), functions: shares(functions, js).slice(0, 12)};
		},
	};
}
