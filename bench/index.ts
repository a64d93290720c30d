/*
 * `npm run bench`: proves sendonce in numbers and writes bench/RESULTS.md,
 * bench/duplicates.svg and bench/results.json. Flags: --intents=5000 (per variant and fault
 * rate), --browser-intents=500, --rounds=5 (overhead rounds, each giving its ratios),
 * --scale=1000,10000, --scale-rounds=3, --concurrency=40, --seed=1, --settled=10000 (intents a
 * profile stores and settles before client.send() is timed in it); --report renders RESULTS.md
 * and the chart again from results.json without measuring; --client measures and prints the
 * client speed targets alone; --list the `list()` target alone (--size=10000), --resume the
 * `resume()` one (--size=1000); --node Node's one-send overhead against ky alone (--intents=4000); --checks what a check of a
 * key costs the server beside a replay.
 */
import {execFileSync} from 'node:child_process';
import {readFile, writeFile} from 'node:fs/promises';
import os from 'node:os';
import {fileURLToPath} from 'node:url';
import {checkCost} from './check-cost.js';
import {clientSpeed, formatClientSpeed, listSpeed, resumeSpeed} from './client-speed.js';
import {browserOverhead, launchBrowser, openSite, RESUME_CONCURRENCY, scale, transactionCost, type ScaleRow} from './browser.js';
import {sweep} from './duplicates.js';
import {nodeOverhead} from './overhead-node.js';
import {chart, percent, renderResults, tables, type BenchData} from './report.js';
import {BenchServer} from './server.js';
import {formatSizes, measureSizes, withinBudgets} from './size.js';
import {integer, ms, ratioText} from './stats.js';
import {POLICY} from './variants.js';

function flag(name: string, fallback: string): string {
	const prefix = `--${name}=`;
	return process.argv.find(argument => argument.startsWith(prefix))?.slice(prefix.length) ?? fallback;
}

function count(name: string, fallback: number): number {
	const value = Number(flag(name, String(fallback)));
	if (!Number.isInteger(value) || value < 1) throw new TypeError(`Expected \`--${name}\` to be a positive integer, got ${flag(name, '')}`);
	return value;
}

function run(command: string, ...args: string[]): string {
	try {
		return execFileSync(command, args, {encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore']}).trim();
	} catch {
		return 'unknown';
	}
}

const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));
const log = (text = '') => console.log(text);

/** Writes RESULTS.md, the chart and the data, and prints every table. */
async function report(data: BenchData): Promise<void> {
	const all = tables(data);
	log(`\n## Targets\n\n${all.targets}\n\n## Duplicates under faults\n\n${all.sweep}\n\n## Overhead per intent, Node\n\n${all.node}\n\n## Overhead per intent, Chromium\n\n${all.page}\n\n## list() and resume(), Chromium IndexedDB\n\n${all.scale}\n\n${all.profile}\n\n${all.functions}\n\n## Size budgets\n\n${formatSizes(data.sizes)}\n`);
	// `npm run bench:server` owns a section of its own: keep it.
	const server = /<!-- bench:server -->[\s\S]*<!-- \/bench:server -->/.exec(await readFile(here('RESULTS.md'), 'utf8').catch(() => ''))?.[0];
	await writeFile(here('RESULTS.md'), server ? `${renderResults(data).trimEnd()}\n\n${server}\n` : renderResults(data));
	await writeFile(here('duplicates.svg'), chart(data));
	log('Wrote bench/RESULTS.md and bench/duplicates.svg.');
}

async function measure(): Promise<{data: BenchData; failures: string[]}> {
	const intents = count('intents', 5000);
	const browserIntents = count('browser-intents', 500);
	const scaleSizes = flag('scale', '1000,10000').split(',').map(Number);
	const concurrency = count('concurrency', 40);
	const rounds = count('rounds', 5);
	const scaleRounds = count('scale-rounds', 3);
	const seed = count('seed', 1);
	const rates = [0, 0.1, 0.3, 0.5];
	const nodeWarmup = 200;
	const browserWarmup = 50;
	const started = performance.now();
	const loadBefore = os.loadavg();
	const failures: string[] = [];
	log(`sendonce bench: ${integer(intents)} intents per variant and fault rate, ${integer(browserIntents)} per client in Chromium, resume() over ${scaleSizes.map(integer).join(' and ')} stored intents.\n`);

	const server = await BenchServer.start();
	const browser = await launchBrowser();
	try {
		// Overhead first, in a process that no other client has warmed up or cluttered.
		log('Overhead per intent, Node…');
		const node = await nodeOverhead(server, {intents: 2000, warmup: nodeWarmup, rounds});
		log(`  sendonce ${ms(node.send.median)} ms, ky ${ms(node.ky.median)} ms, fetch ${ms(node.fetch.median)} ms (median): ${ratioText(node.ratio.ky)} ky, ${ratioText(node.ratio.fetch)} fetch`);

		log('Overhead per intent, Chromium…');
		const site = await openSite(server);
		const inPage = await browserOverhead(browser, site, {intents: browserIntents, warmup: browserWarmup, rounds});
		const floor = await transactionCost(browser, site, 500);
		for (const row of inPage.rows) log(`  ${row.label}: ${ms(row.median)} ms (median)`);
		log(`  client.send(): ${ratioText(inPage.ratio.ky)} ky, ${ratioText(inPage.ratio.fetch)} fetch`);

		log('list() and resume() over stored intents, Chromium IndexedDB…');
		const scaleRows: ScaleRow[] = [];
		for (const [index, size] of scaleSizes.entries()) {
			// Split resume()'s time at the smallest size only: its costs are per intent, and the larger runs are long.
			const row = await scale(browser, server, size, {rounds: scaleRounds, decompose: index === 0});
			scaleRows.push(row);
			log(`  ${integer(size)} stored: list() ${ms(row.list)} ms, resume() ${ms(row.resume)} ms, plain POSTs ${ms(row.posts)} ms: ${ratioText(row.ratio)}${row.resumeInstant === undefined ? '' : ` (resume() with no network: ${ms(row.resumeInstant)} ms)`}`);
			if (row.succeeded !== size || row.effects !== size || row.left !== 0) {
				failures.push(`resume() over ${size} intents: ${row.succeeded} succeeded, ${row.effects} effects, ${row.left} records left`);
			}
		}

		log('Client speed targets, Chromium profiles on disk…');
		const client = await clientSpeed(server, {rounds: scaleRounds, intents: 150, warmup: browserWarmup, settled: count('settled', 10_000), sizes: scaleSizes, log});
		log(formatClientSpeed(client));

		log('Duplicates under faults…');
		// A short unreported pass first, so that no variant pays the JIT's warm-up.
		await sweep(server, {intents: Math.min(200, intents), rates: [0.1], concurrency, seed: seed + 1000});
		const sweepRows = await sweep(server, {
			intents,
			rates,
			concurrency,
			seed,
			onRow(row) {
				log(`  ${percent(row.rate).padStart(4)} ${row.variant.padEnd(16)} effects ${integer(row.effects).padStart(6)}  duplicates ${integer(row.duplicates).padStart(5)}  unresolved ${integer(row.unresolved + row.failed).padStart(5)}  ${(row.requests / row.intents).toFixed(2)} req/intent  (${row.seconds.toFixed(1)} s)`);
			},
		});
		const duplicates = sweepRows.filter(row => row.variant.startsWith('sendonce')).reduce((total, row) => total + row.duplicates, 0);
		if (duplicates > 0) failures.push(`sendonce performed ${duplicates} duplicate effects`);

		log('Sizes…');
		const sizes = await measureSizes();
		const profile = scaleRows.find(row => row.profile)?.profile;
		if (!profile) throw new Error('no CPU profile of resume() was taken');
		const data: BenchData = {
			date: new Date().toISOString(),
			seconds: (performance.now() - started) / 1000,
			machine: {
				cores: run('nproc'),
				cpu: os.cpus()[0]?.model ?? 'unknown CPU',
				memoryGiB: os.totalmem() / 2 ** 30,
				os: `${os.type()} ${os.release()}`,
				node: process.version,
				chromium: run(process.env.CHROME_PATH ?? '/usr/bin/chromium', '--version'),
				loadBefore,
				loadAfter: os.loadavg(),
			},
			settings: {intents, rates, concurrency, seed, policy: POLICY, nodeWarmup, browserIntents, browserWarmup, resumeConcurrency: RESUME_CONCURRENCY, rounds, scaleRounds},
			node,
			browser: inPage,
			transactionCost: floor,
			scale: scaleRows.map(({profile: _, ...row}) => row),
			profile,
			sweep: sweepRows,
			sizes,
			client,
		};
		return {data, failures};
	} finally {
		await browser.close();
		await server.close();
	}
}

if (process.argv.includes('--client')) {
	// The client speed targets alone: a few minutes instead of the whole run.
	const server = await BenchServer.start();
	try {
		const speed = await clientSpeed(server, {rounds: count('rounds', 5), intents: count('browser-intents', 150), warmup: 30, settled: count('settled', 10_000), sizes: flag('scale', '1000,10000').split(',').map(Number), log});
		log(`\n${formatClientSpeed(speed)}`);
		process.exitCode = speed.targets.every(row => row.met) ? 0 : 1;
	} finally {
		await server.close();
	}
} else if (process.argv.includes('--list') || process.argv.includes('--resume')) {
	// The list() or resume() target alone: about a minute.
	const server = await BenchServer.start();
	try {
		const measure = process.argv.includes('--list') ? listSpeed : resumeSpeed;
		const row = await measure(server, {rounds: count('rounds', 5), size: count('size', process.argv.includes('--list') ? 10_000 : 1000), log});
		log(`\n${row.met ? 'met' : 'NOT MET'}  ${row.target}: ${row.ratio.median.toFixed(2)}× (${row.ratio.min.toFixed(2)}–${row.ratio.max.toFixed(2)}, ${row.ratio.runs.length} runs); ${row.detail}`);
		process.exitCode = row.met ? 0 : 1;
	} finally {
		await server.close();
	}
} else if (process.argv.includes('--checks')) {
	// What a check of a key costs the server, beside a replay: under a minute.
	log('A check of a key against a replay, per call, in this process (idempotency(), no HTTP):');
	await checkCost({rounds: count('rounds', 3), log});
} else if (process.argv.includes('--node')) {
	// The Node overhead target alone: under a minute.
	const server = await BenchServer.start();
	try {
		const node = await nodeOverhead(server, {intents: count('intents', 4000), warmup: 200, rounds: count('rounds', 5)});
		log(`sendonce ${ms(node.send.median)} ms, ky ${ms(node.ky.median)} ms, fetch ${ms(node.fetch.median)} ms (median): ${ratioText(node.ratio.ky)} ky, ${ratioText(node.ratio.fetch)} fetch`);
		process.exitCode = node.ratio.ky.median <= 1 ? 0 : 1;
	} finally {
		await server.close();
	}
} else if (process.argv.includes('--report')) {
	await report(JSON.parse(await readFile(here('results.json'), 'utf8')) as BenchData);
} else {
	const {data, failures} = await measure();
	// Every figure as data, to render the report again or compare runs without measuring.
	await writeFile(here('results.json'), `${JSON.stringify(data, null, '\t')}\n`);
	await report(data);
	log(`npm run bench took ${(data.seconds / 60).toFixed(1)} minutes.`);
	if (!withinBudgets(data.sizes)) log('Size: over budget (see above); `npm run size` fails until it is back within.');
	for (const failure of failures) console.error(`FAILED: ${failure}`);
	process.exitCode = failures.length > 0 ? 1 : 0;
}

// The Node clients leave a BroadcastChannel open (sendonce's cross-tab channel), which would keep the process alive.
process.exit();
