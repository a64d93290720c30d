/*
 * The client's speed targets (issue 23), each measured side by side with its yardstick in the
 * same run, in Chromium profiles on disk, as a user's browser keeps IndexedDB: `client.send()`
 * against `ky.post` in a fresh profile and in one that already stored and settled many intents,
 * `resume()` against as many plain POSTs, `list()` against the raw IndexedDB read.
 */
import os from 'node:os';
import type {BrowserContext, Page} from 'playwright-core';
import {launchProfile, profileDir} from '../test/browser/harness.js';
import {openSite, RESUME_CONCURRENCY} from './browser.js';
import type {BenchServer} from './server.js';
import {integer, median, ms, spread, type Spread} from './stats.js';

/** One target: what it asks, what this run measured (each round's ratio), and the verdict. */
export interface ClientTarget {
	target: string;
	limit: number;
	ratio: Spread;
	/** The figures the ratio divides, medians over rounds, for the report. */
	detail: string;
	met: boolean;
}

export interface ClientSpeed {
	/** 1, 5 and 15 minute load averages before and after. */
	loadBefore: number[];
	loadAfter: number[];
	rounds: number;
	settled: number;
	/** How long storing and settling them took, and how many records were left. */
	settleMs: number;
	left: number;
	/** IndexedDB transactions per `client.send()`, fresh profile and settled profile. */
	transactions: {fresh: {readonly: number; readwrite: number}; settled: {readonly: number; readwrite: number}};
	targets: ClientTarget[];
}

interface Profile {
	context: BrowserContext;
	page: Page;
	close(): Promise<void>;
}

/** Headless Chromium over a new profile directory, with the bench page loaded. */
async function openProfile(url: string): Promise<Profile> {
	const dir = await profileDir();
	const context = await launchProfile(dir.path);
	const page = context.pages()[0] ?? await context.newPage();
	const profile = {
		context,
		page,
		async close() {
			await context.close();
			await dir.remove();
		},
	};
	await reload(profile, url);
	return profile;
}

/** A freshly loaded page: no client of an earlier step is listening. */
async function reload({page}: Profile, url: string): Promise<void> {
	await page.goto(`${url}/`);
	await page.waitForFunction(() => typeof window.bench === 'object');
}

const SEND = 'sendonce-send-indexeddb';

/** One round of sequential `client.send()`, ky and fetch in alternating blocks; medians in ms. */
async function sendRound(profile: Profile, url: string, {intents, warmup, block}: {intents: number; warmup: number; block: number}) {
	await reload(profile, url);
	const measured = await profile.page.evaluate(async options => window.bench.overhead(options), {count: intents, warmup, block, only: [SEND, 'ky', 'fetch']});
	return {send: median(measured.times[SEND]!), ky: median(measured.times['ky']!), fetch: median(measured.times['fetch']!), transactions: measured.transactions};
}

/** One round of `resume()` of `size` stored intents against as many plain POSTs, taking turns. */
async function resumeRound(profile: Profile, url: string, size: number, round: number, resumes: number[], posts: number[]): Promise<void> {
	const resume = async () => {
		await profile.page.evaluate(async count => window.bench.seed({count}), size);
		await reload(profile, url);
		const resumed = await profile.page.evaluate(async () => window.bench.resume({instant: false}));
		if (resumed.outcomes['succeeded'] !== size || resumed.left !== 0) throw new Error(`resume() of ${size}: ${JSON.stringify(resumed.outcomes)}, ${resumed.left} left`);
		resumes.push(resumed.ms);
	};

	const plain = async () => {
		await reload(profile, url);
		posts.push(await profile.page.evaluate(async options => window.bench.posts(options), {count: size, concurrency: RESUME_CONCURRENCY}));
	};

	for (const step of round % 2 === 0 ? [resume, plain] : [plain, resume]) await step();
}

/** One round of `list()` against the raw read of the same `size` records, taking turns (which goes first alternates). */
async function listRound(profile: Profile, url: string, size: number, round: number, lists: number[], raws: number[]): Promise<void> {
	const list = async () => {
		await reload(profile, url);
		const listed = await profile.page.evaluate(async () => window.bench.list());
		if (listed.count !== size) throw new Error(`list() found ${listed.count} of ${size}`);
		lists.push(listed.ms);
	};

	const raw = async () => {
		await reload(profile, url);
		const read = await profile.page.evaluate(async () => window.bench.rawRead());
		if (read.count !== size) throw new Error(`the raw read found ${read.count} of ${size}`);
		raws.push(read.ms);
	};

	for (const step of round % 2 === 0 ? [list, raw] : [raw, list]) await step();
}

const range = ({median: middle, min, max}: Spread, format = ms) => `${format(middle)} (${format(min)}–${format(max)})`;
const ratioOf = (ratio: Spread) => `${ratio.median.toFixed(2)}× (${ratio.min.toFixed(2)}–${ratio.max.toFixed(2)}, ${ratio.runs.length} runs)`;

function target(name: string, limit: number, ratios: number[], detail: string): ClientTarget {
	const ratio = spread(ratios);
	return {target: name, limit, ratio, detail, met: ratio.median <= limit};
}

/**
 * Measures every client speed target, `rounds` times each; the variants of one target take
 * turns within a round (and which goes first alternates), so that drift hits them alike.
 */
export async function clientSpeed(server: BenchServer, {rounds, intents, warmup, settled, sizes, log = () => undefined}: {rounds: number; intents: number; warmup: number; settled: number; sizes: number[]; log?: (line: string) => void}): Promise<ClientSpeed> {
	const loadBefore = os.loadavg();
	// One origin for the whole run: a profile's IndexedDB belongs to it.
	const url = await openSite(server);
	const targets: ClientTarget[] = [];

	// A profile that has stored and settled `settled` intents, through client.send(), 6 at a time.
	const used = await openProfile(url);
	let settleMs: number;
	let left: number;
	const transactions = {fresh: {readonly: 0, readwrite: 0}, settled: {readonly: 0, readwrite: 0}};
	try {
		log(`  storing and settling ${integer(settled)} intents in one profile…`);
		({ms: settleMs, left} = await used.page.evaluate(async options => window.bench.settle(options), {count: settled, concurrency: RESUME_CONCURRENCY}));
		log(`  ${ms(settleMs)} ms, ${left} records left`);
		const fresh: Array<Awaited<ReturnType<typeof sendRound>>> = [];
		const old: Array<Awaited<ReturnType<typeof sendRound>>> = [];
		for (let round = 0; round < rounds; round++) {
			const measureFresh = async () => {
				const profile = await openProfile(url);
				try {
					fresh.push(await sendRound(profile, url, {intents, warmup, block: 25}));
				} finally {
					await profile.close();
				}
			};

			const measureOld = async () => {
				old.push(await sendRound(used, url, {intents, warmup, block: 25}));
			};

			for (const step of round % 2 === 0 ? [measureFresh, measureOld] : [measureOld, measureFresh]) await step();
			const [a, b] = [fresh.at(-1)!, old.at(-1)!];
			log(`  round ${round + 1}: fresh send ${ms(a.send)} / ky ${ms(a.ky)} ms = ${(a.send / a.ky).toFixed(2)}×; settled send ${ms(b.send)} / ky ${ms(b.ky)} ms = ${(b.send / b.ky).toFixed(2)}× (load ${os.loadavg()[0]!.toFixed(2)})`);
		}

		const average = (rows: typeof fresh) => ({
			readonly: rows.reduce((total, row) => total + row.transactions.readonly, 0) / rows.length,
			readwrite: rows.reduce((total, row) => total + row.transactions.readwrite, 0) / rows.length,
		});
		transactions.fresh = average(fresh);
		transactions.settled = average(old);
		const detail = (rows: typeof fresh) => `send ${range(spread(rows.map(row => row.send)))} ms, ky ${range(spread(rows.map(row => row.ky)))} ms, fetch ${range(spread(rows.map(row => row.fetch)))} ms`;
		targets.push(
			target('Chromium + IndexedDB, one `client.send()`, fresh profile: ≤ 1.0× `ky.post`', 1, fresh.map(row => row.send / row.ky), detail(fresh)),
			target(`Chromium + IndexedDB, one \`client.send()\`, profile that stored and settled ${integer(settled)} intents: ≤ 1.0× \`ky.post\``, 1, old.map(row => row.send / row.ky), detail(old)),
		);
	} finally {
		await used.close();
	}

	for (const size of sizes) {
		const profile = await openProfile(url);
		try {
			const resumes: number[] = [];
			const posts: number[] = [];
			const lists: number[] = [];
			const raws: number[] = [];
			for (let round = 0; round < rounds; round++) {
				await resumeRound(profile, url, size, round, resumes, posts);
				if (size === sizes.at(-1)) {
					await profile.page.evaluate(async count => window.bench.seed({count}), size);
					await listRound(profile, url, size, round, lists, raws);
				}

				log(`  ${integer(size)} stored, round ${round + 1}: resume() ${ms(resumes.at(-1)!)} ms, plain POSTs ${ms(posts.at(-1)!)} ms = ${(resumes.at(-1)! / posts.at(-1)!).toFixed(2)}×${lists.length > round ? `; list() ${ms(lists.at(-1)!)} ms, raw read ${ms(raws.at(-1)!)} ms = ${(lists.at(-1)! / raws.at(-1)!).toFixed(2)}×` : ''} (load ${os.loadavg()[0]!.toFixed(2)})`);
			}

			targets.push(resumeTarget(size, resumes, posts));
			if (lists.length > 0) {
				targets.push(target(`\`list()\` of ${integer(size)}: ≤ 1.3× the raw IndexedDB read of the same records`, 1.3, lists.map((value, round) => value / raws[round]!), `list() ${range(spread(lists))} ms, raw read ${range(spread(raws))} ms`));
			}
		} finally {
			await profile.close();
		}
	}

	return {loadBefore, loadAfter: os.loadavg(), rounds, settled, settleMs, left, transactions, targets};
}

/** The targets as lines for a terminal: median, range, verdict. */
/**
 * The `list()` target alone (`npm run bench -- --list`): `list()` of `size` stored intents against
 * the raw IndexedDB read of the same records, taking turns, `rounds` times; the ratio per round.
 */
export async function listSpeed(server: BenchServer, {rounds, size, log = () => undefined}: {rounds: number; size: number; log?: (line: string) => void}): Promise<ClientTarget> {
	const url = await openSite(server);
	const profile = await openProfile(url);
	try {
		await profile.page.evaluate(async count => window.bench.seed({count}), size);
		const lists: number[] = [];
		const raws: number[] = [];
		for (let round = 0; round < rounds; round++) {
			await listRound(profile, url, size, round, lists, raws);
			log(`  round ${round + 1}: list() ${ms(lists.at(-1)!)} ms, raw read ${ms(raws.at(-1)!)} ms = ${(lists.at(-1)! / raws.at(-1)!).toFixed(2)}× (load ${os.loadavg()[0]!.toFixed(2)})`);
		}

		return target(`\`list()\` of ${integer(size)}: ≤ 1.3× the raw IndexedDB read of the same records`, 1.3, lists.map((value, round) => value / raws[round]!), `list() ${range(spread(lists))} ms, raw read ${range(spread(raws))} ms`);
	} finally {
		await profile.close();
	}
}

/** The `resume()` target alone (`npm run bench -- --resume --size=1000`). */
export async function resumeSpeed(server: BenchServer, {rounds, size, log = () => undefined}: {rounds: number; size: number; log?: (line: string) => void}): Promise<ClientTarget> {
	const url = await openSite(server);
	const profile = await openProfile(url);
	try {
		const resumes: number[] = [];
		const posts: number[] = [];
		for (let round = 0; round < rounds; round++) {
			await resumeRound(profile, url, size, round, resumes, posts);
			log(`  round ${round + 1}: resume() ${ms(resumes.at(-1)!)} ms, plain POSTs ${ms(posts.at(-1)!)} ms = ${(resumes.at(-1)! / posts.at(-1)!).toFixed(2)}× (load ${os.loadavg()[0]!.toFixed(2)})`);
		}

		return resumeTarget(size, resumes, posts);
	} finally {
		await profile.close();
	}
}

const resumeTarget = (size: number, resumes: number[], posts: number[]) => target(`\`resume()\` of ${integer(size)}: ≤ 1.15× as many plain POSTs, ${RESUME_CONCURRENCY} at a time`, 1.15, resumes.map((value, round) => value / posts[round]!), `resume() ${range(spread(resumes))} ms, POSTs ${range(spread(posts))} ms`);

export function formatClientSpeed(speed: ClientSpeed): string {
	const load = (values: number[]) => values.map(value => value.toFixed(2)).join(' / ');
	return [
		`Client speed, Chromium profiles on disk, ${speed.rounds} rounds each (load average ${load(speed.loadBefore)} before, ${load(speed.loadAfter)} after):`,
		...speed.targets.map(row => `  ${row.met ? 'met    ' : 'NOT MET'}  ${row.target}: ${ratioOf(row.ratio)}; ${row.detail}`),
		`  IndexedDB transactions per client.send(): ${speed.transactions.fresh.readwrite.toFixed(2)} readwrite + ${speed.transactions.fresh.readonly.toFixed(2)} readonly (fresh), ${speed.transactions.settled.readwrite.toFixed(2)} + ${speed.transactions.settled.readonly.toFixed(2)} (settled profile)`,
	].join('\n');
}
