/*
 * Renders bench/RESULTS.md and bench/duplicates.svg from what `index.ts` measured (also
 * kept as bench/results.json, so that `npm run bench -- --report` can render them again).
 */
import type {BrowserOverhead, ResumeProfile, ScaleRow} from './browser.js';
import type {ClientSpeed} from './client-speed.js';
import {duplicatesChart} from './chart.js';
import type {SweepRow} from './duplicates.js';
import type {NodeOverhead} from './overhead-node.js';
import {BUDGETS, CORE_TARGET, formatSizes, kib, withinBudgets, type SizeReport} from './size.js';
import {integer, ms, ratioText, table, type Spread} from './stats.js';
import {POLICY, RETRY_STATUSES} from './variants.js';

/** Everything one run measured, and where. */
export interface BenchData {
	/** ISO date of the end of the run. */
	date: string;
	seconds: number;
	machine: {
		cores: string;
		cpu: string;
		memoryGiB: number;
		os: string;
		node: string;
		chromium: string;
		/** 1, 5 and 15 minute load averages. */
		loadBefore: number[];
		loadAfter: number[];
	};
	settings: {
		intents: number;
		rates: number[];
		concurrency: number;
		seed: number;
		policy: typeof POLICY;
		nodeWarmup: number;
		browserIntents: number;
		browserWarmup: number;
		/** How many intents `client.resume()` sends at once. */
		resumeConcurrency: number;
		/** Overhead rounds (each its own ratios) and list()/resume() rounds per size. */
		rounds: number;
		scaleRounds: number;
	};
	node: NodeOverhead;
	browser: BrowserOverhead;
	transactionCost: {readwrite: number; readonly: number};
	scale: ScaleRow[];
	profile: ResumeProfile;
	sweep: SweepRow[];
	sizes: SizeReport;
	/** The client speed targets of issue 23, measured in profiles on disk (absent from older runs). */
	client?: ClientSpeed;
}

export const percent = (rate: number) => `${Math.round(rate * 100)} %`;
const share = (value: number) => `${(value * 100).toFixed(0)} %`;
const signed = (value: number) => `${value >= 0 ? '+' : '−'}${ms(Math.abs(value))}`;
const plural = (count: number, one: string, many: string) => `${integer(count)} ${count === 1 ? one : many}`;

/** The lean-core issue's targets: each beside what this run measured. */
export function targets(data: BenchData): Array<{target: string; measured: string; met: boolean}> {
	const {node, browser, scale, sizes} = data;
	const ratio = (target: string, spread: Spread, limit: number) => ({target, measured: ratioText(spread), met: spread.median <= limit});
	const largest = scale.at(-1);
	const onTop = (name: string) => sizes.onTop.find(entry => entry.name === name);
	return [
		ratio('Chromium + IndexedDB, one `client.send()`: ≤ 1.0× a plain `ky.post`', browser.ratio.ky, 1),
		ratio('Node, memory store, one `client.send()`: ≤ 1.0× `ky.post`', node.ratio.ky, 1),
		ratio('Node, memory store, one `client.send()`: ≤ 2.2× `fetch`', node.ratio.fetch, 2.2),
		...scale.map(row => ratio(`\`resume()\` of ${integer(row.stored)} stored intents: ≤ 1.15× as many plain POSTs, ${data.settings.resumeConcurrency} at a time`, row.ratio, 1.15)),
		...(largest ? [{target: `\`list()\` of ${integer(largest.stored)}: ≤ 150 ms`, measured: `${ms(largest.list)} ms (${ms(largest.listSpread.min)}–${ms(largest.listSpread.max)}, ${largest.listSpread.runs.length} runs)`, met: largest.list <= 150}] : []),
		...(data.client?.targets ?? []).map(row => ({target: `${row.target} (profiles on disk; ${row.detail})`, measured: ratioText(row.ratio), met: row.met})),
		{target: `core, all in, min+gzip: ≤ ${kib(CORE_TARGET)}`, measured: kib(sizes.core), met: sizes.core <= CORE_TARGET},
		{target: '`memoryStore` alone: ≤ 1 KiB', measured: kib(sizes.memoryStore), met: sizes.memoryStore <= 1024},
		...(['react', 'vue'] as const).map(name => ({target: `\`sendonce/${name}\` on top of the core: ≤ 1.5 KiB`, measured: kib(onTop(name)?.onTop ?? Number.NaN), met: (onTop(name)?.onTop ?? Number.POSITIVE_INFINITY) <= 1.5 * 1024})),
	];
}

/** The tables, as Markdown (also printed to stdout). */
export function tables(data: BenchData) {
	const {node, browser, scale, profile, sweep} = data;
	const byName = Object.fromEntries(browser.rows.map(row => [row.name, row]));
	const perIntent = (value: number | undefined, size: number) => (value === undefined ? '–' : `${ms(value)} (${ms(value / size)}/intent)`);
	return {
		node: table(['client', 'intents', 'median ms', 'mean ms'], [
			...[node.send, node.intent, node.ky, node.fetch].map(row => [row.label, integer(row.intents), ms(row.median), ms(row.mean)]),
			['**client.send() / ky**', '', `**${ratioText(node.ratio.ky)}**`, ''],
			['**client.send() / fetch**', '', `**${ratioText(node.ratio.fetch)}**`, ''],
		], ['l', 'r', 'r', 'r']),
		page: table(['client', 'intents', 'median ms', 'mean ms', 'median − ky', 'median − fetch'], [
			...browser.rows.map(row => [
				row.label,
				integer(row.intents),
				ms(row.median),
				ms(row.mean),
				row.name === 'ky' ? '' : signed(row.median - byName['ky']!.median),
				row.name === 'fetch' ? '' : signed(row.median - byName['fetch']!.median),
			]),
			['**client.send() / ky**', '', `**${ratioText(browser.ratio.ky)}**`, '', '', ''],
			['**client.send() / fetch**', '', `**${ratioText(browser.ratio.fetch)}**`, '', '', ''],
		], ['l', 'r', 'r', 'r', 'r', 'r']),
		scale: table(['stored intents', 'IndexedDB read, ms', 'list(), ms', 'resume(), no network, ms', 'resume(), local server, ms', `plain POSTs, ${data.settings.resumeConcurrency} at a time, ms`, 'resume() / POSTs'], scale.map(row => [
			integer(row.stored), ms(row.rawRead), perIntent(row.list, row.stored), perIntent(row.resumeInstant, row.stored), perIntent(row.resume, row.stored), perIntent(row.posts, row.stored), ratioText(row.ratio),
		]), ['r', 'r', 'r', 'r', 'r', 'r', 'r']),
		targets: table(['target', 'measured (median of runs, lowest–highest)', 'verdict'], targets(data).map(row => [row.target, row.measured, row.met ? 'met' : '**not met**']), ['l', 'r', 'l']),
		profile: table(['renderer time during resume()', 'share'], profile.kinds.map(kind => [kind.name, share(kind.share)]), ['l', 'r']),
		functions: table(['JavaScript self time, by function', 'share of JS'], profile.functions.slice(0, 10).map(entry => [entry.name, share(entry.share)]), ['l', 'r']),
		sweep: table(['faults', 'variant', 'effects', 'duplicate effects', 'orders not carried out', 'unresolved / gave up', 'requests per intent', '409 answers', 'p50 settle, ms', 'p95 settle, ms'], sweep.map(row => [
			percent(row.rate),
			row.label,
			integer(row.effects),
			row.variant === 'sendonce' ? `**${integer(row.duplicates)}**` : integer(row.duplicates),
			integer(row.missing),
			integer(row.unresolved + row.failed),
			(row.requests / row.intents).toFixed(2),
			integer(row.conflicts),
			ms(row.p50),
			ms(row.p95),
		]), ['r', 'l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r']),
	};
}

export function chart(data: BenchData): string {
	return duplicatesChart(data.sweep);
}

export function renderResults(data: BenchData): string {
	const {node, scale: scaleRows, profile, sweep: sweepRows, sizes, machine} = data;
	const {intents, rates, concurrency, policy: POLICY} = data.settings;
	const RESUME_CONCURRENCY = data.settings.resumeConcurrency;
	const {node: nodeTable, page: pageTable, scale: scaleTable, profile: profileTable, functions: functionsTable, sweep: sweepTable, targets: targetTable} = tables(data);
	const byName = Object.fromEntries(data.browser.rows.map(row => [row.name, row]));
	const floor = data.transactionCost;
	const transactionsPerIntent = `${data.browser.transactions.readonly.toFixed(1)} readonly + ${data.browser.transactions.readwrite.toFixed(1)} readwrite`;
	const load = (values: number[]) => values.map(value => value.toFixed(2)).join(' / ');
	const machineText = [
		`- ${machine.cores} cores (\`nproc\`), ${machine.cpu}, ${machine.memoryGiB.toFixed(1)} GiB RAM, ${machine.os}`,
		`- Node ${machine.node} (\`node -v\`); ${machine.chromium}, headless, driven by playwright-core`,
		`- load average ${load(machine.loadBefore)} at the start, ${load(machine.loadAfter)} at the end (1 / 5 / 15 min): other processes shared these cores, so read the timings as this machine's, not as constants`,
	].join('\n');

	const rateRows = (variant: string) => sweepRows.filter(row => row.variant === variant);
	const worst = (variant: string) => rateRows(variant).at(-1);
	const sendonceRows = rateRows('sendonce');
	const kyWorst = worst('ky-no-key');
	const freshWorst = worst('ky-fresh-key');
	const pRetryWorst = worst('p-retry-fetch');
	const faultFree = sweepRows.filter(row => row.rate === 0 && row.duplicates > 0);
	const faultFreeNote = faultFree.length > 0
		? `At 0 % injected faults, ${faultFree.map(row => `"${row.label}" still performed ${plural(row.duplicates, 'duplicate effect', 'duplicate effects')}`).join(' and ')}: with ${concurrency} orders in flight on a busy machine, a few fault-free requests took longer than the ${POLICY.timeout} ms timeout, and their retries carried no stable key. That is the real-world version of the slow fault. sendonce's retries of the same kind (its requests per intent above 1.00) carried the stored key.\n\n`
		: '';

	const resumeLargest = scaleRows.at(-1);
	const resumeSmallest = scaleRows[0];
	const growthOf = (ratio: number, size: number) => (ratio >= size * 0.8 ? 'linearly' : 'less than linearly (fixed costs weigh more at the smaller size)');
	const growth = resumeLargest && resumeSmallest && resumeLargest !== resumeSmallest
		? (() => {
			const size = resumeLargest.stored / resumeSmallest.stored;
			const list = resumeLargest.list / resumeSmallest.list;
			const resume = resumeLargest.resume / resumeSmallest.resume;
			return `From ${integer(resumeSmallest.stored)} to ${integer(resumeLargest.stored)} stored intents (${size.toFixed(0)}×), list() took ${list.toFixed(1)}× as long, growing ${growthOf(list, size)}, and resume() ${resume.toFixed(1)}× as long, growing ${growthOf(resume, size)}.`;
		})()
		: '';
	const detail = scaleRows.find(row => row.resumeInstant !== undefined);
	const split = detail
		? `Over ${integer(detail.stored)} intents, storage and orchestration alone (resume() with a fetch that answers at once, less list()) cost ${ms((detail.resumeInstant! - detail.list) / detail.stored)} ms per intent: ${detail.transactions.readwrite.toFixed(2)} readwrite IndexedDB transactions per intent (intents are claimed and marked in batches, settled ones deleted together), a Web Lock and a BroadcastChannel message each. With ${RESUME_CONCURRENCY} sends in flight, that work overlaps the network's.`
		: '';
	const met = targets(data).filter(row => row.met).length;

	return `# sendonce in numbers

Measured ${data.date.slice(0, 16).replace('T', ' ')} UTC by \`npm run bench\` (${(data.seconds / 60).toFixed(1)} minutes) on:

${machineText}

## Summary

- **Duplicates under faults.** ${integer(intents)} intents per variant and fault rate, the same faults for every variant, at most ${POLICY.limit} attempts each. sendonce performed **${sendonceRows.map(row => integer(row.duplicates)).join(', ')} duplicate effects** at ${rates.map(percent).join(', ')} faults. At ${percent(kyWorst?.rate ?? 0)}, ky with POST retries performed ${integer(kyWorst?.duplicates ?? 0)}, ky with a fresh key per try ${integer(freshWorst?.duplicates ?? 0)}, p-retry around fetch ${integer(pRetryWorst?.duplicates ?? 0)}.
- **Overhead, Node.** sendonce's \`client.send()\` with the memory store costs ${ms(node.send.median)} ms per intent against ${ms(node.ky.median)} ms for a plain \`ky.post\` and ${ms(node.fetch.median)} ms for \`fetch\` (median, ${integer(node.send.intents)} sequential intents each): **${ratioText(node.ratio.ky)} ky, ${ratioText(node.ratio.fetch)} fetch**.
- **Overhead, Chromium.** Median per intent: \`client.send()\` with IndexedDB ${ms(byName['sendonce-send-indexeddb']!.median)} ms (${transactionsPerIntent} transactions), \`intent()\` + \`send()\` ${ms(byName['sendonce-indexeddb']!.median)} ms, with sessionStorage ${ms(byName['sendonce-session']!.median)} ms, ky ${ms(byName['ky']!.median)} ms, fetch ${ms(byName['fetch']!.median)} ms: **${ratioText(data.browser.ratio.ky)} ky**.
- **Scale.** ${scaleRows.map(row => `${integer(row.stored)} stored intents: list() ${ms(row.list)} ms, resume() ${ms(row.resume)} ms against ${ms(row.posts)} ms for as many plain POSTs (**${ratioText(row.ratio)}**)`).join('; ')}.
- **Size.** \`sendonce\` is ${kib(sizes.core)} minified and gzipped with its dependencies (budget ${kib(BUDGETS.core)}, target ${kib(CORE_TARGET)}). ${withinBudgets(sizes) ? 'Within budget.' : '**Over budget.**'}
- **Targets.** ${met} of ${targets(data).length} met in this run (table below).

## Targets

Each ratio is the median of ${data.settings.rounds} rounds (overhead) or ${data.settings.scaleRounds} rounds (resume()), each round comparing clients measured side by side; the range is the lowest and highest round.

${targetTable}

## 1. Duplicates under faults

![Duplicate effects per variant and fault rate](duplicates.svg)

Each bar is ${integer(intents)} orders sent to a local server that honours the idempotency contract (test/server/contract-server.ts, in its own process): it claims a key before the work, answers 409 while the work runs and replays its answer afterwards; a request without a key is simply performed. The server counts the work it does per order, so a duplicate is an order charged twice, whatever the client believed.

At a fault rate *r*, each request (every attempt, retries included) meets a fault with probability *r*, one of four with equal odds: the reply is lost after the work (connection dropped), a 502 after the work, a 503 before it, or work that takes ${POLICY.slowMs} ms against a per-attempt timeout of ${POLICY.timeout} ms. The fault of the *n*-th request of order *i* is drawn from a seeded hash of (*i*, *n*), so every variant meets the same faults. Every variant retries the same statuses (${RETRY_STATUSES.join(', ')}), network errors and timeouts, at most ${POLICY.limit} attempts per order, with full-jitter backoff from ${POLICY.baseDelay} ms capped at ${POLICY.maxDelay} ms (p-retry: its own randomised exponential backoff, ${POLICY.baseDelay} ms × 2ⁿ⁻¹ × [1, 2)), ${concurrency} orders in flight.

- **sendonce**: \`createClient({store: 'memory', retry: {limit: ${POLICY.limit}, baseDelay: ${POLICY.baseDelay}, maxDelay: ${POLICY.maxDelay}, budget: false}, timeout: ${POLICY.timeout}})\`, one intent per order. The retry budget is off so that every variant has the same retry limit; the row below it keeps the default budget of 500 tokens, which stops retrying once too many fail (AWS SDK standard mode): fewer requests, more unresolved intents, still no duplicate.
- **ky, POST retries on, no key**: \`ky.create({retry: {limit: ${POLICY.limit - 1}, methods: ['post'], statusCodes, retryOnTimeout: true, jitter: true, …}, timeout: ${POLICY.timeout}})\`.
- **ky, a new key on every try**: the same, with an \`Idempotency-Key\` made where the request is made, and a new one set in ky's \`beforeRetry\` hook: the classic mistake. The server honours every key, and every key is a new order.
- **p-retry around fetch, no key**: \`pRetry(() => fetch(…, {signal: AbortSignal.timeout(${POLICY.timeout})}), {retries: ${POLICY.limit - 1}, …})\`.

*Duplicate effects* is the sum over orders of max(0, effects − 1). *Orders not carried out*: no effect at all (the client gave up before any attempt reached the work). *Unresolved / gave up*: the client stopped without a definitive answer (sendonce: \`unresolved\`, "your order may have been placed"; the others: the promise rejected). *Settle*: from the call to the outcome, ${concurrency} orders in flight in one Node process, so it includes queueing.

${sweepTable}

${faultFreeNote}The three variants without a stable key perform exactly the same extra work: with the same faults and the same retries, a retry without the original key is a new order whether it carries no key or a new one. sendonce's retries meet 409 while the first attempt still works, and the server's stored answer afterwards.

## 2. Overhead per intent

Sequential intents on loopback, no faults, against the same server; the clients take turns in blocks so that drift hits them alike.

**Node** (${integer(node.send.intents)} intents each after ${integer(data.settings.nodeWarmup)} of warm-up; both send the same body with an \`Idempotency-Key\`, so the server's work is the same):

${nodeTable}

**Chromium** (${integer(data.settings.browserIntents)} intents each after ${integer(data.settings.browserWarmup)} of warm-up, timed in the page with \`performance.now()\`; the page is served by the contract server and loads sendonce and ky bundled by esbuild; ky and fetch send the same headers):

${pageTable}

Each \`client.send()\` in IndexedDB opens ${transactionsPerIntent} transactions on average (counted in the page by wrapping \`IDBDatabase.prototype.transaction\`): one writes the new record already \`sending\` with its first attempt (it reads what the scope holds and writes in the same transaction, while the Web Lock is requested), and the settled record's delete rides along with the next write instead of costing a transaction of its own on the caller's path. \`intent()\` + \`send()\` pays one more: the record is created \`pending\`, then marked \`sending\` (the write-ahead, checked against the stored record). One IndexedDB transaction alone, one after another, costs ${ms(floor.readwrite)} ms (readwrite) and ${ms(floor.readonly)} ms (readonly) in this browser.

## 3. list() and resume() over stored intents

Chromium's IndexedDB, database \`sendonce\`, object store \`intents\`, seeded in one transaction with valid version-1 records (\`intent:<scope>\` ids, pending, each a POST to the local server). Each step runs in a freshly loaded page with a new client whose store is already open: *list()* reads, validates (a hand-written guard, src/record.ts) and wraps every record; *resume(), local server* sends every intent to the contract server (every one succeeded, the server did each order's work once, no record was left). *Plain POSTs* is the same number of \`fetch\` POSTs, ${RESUME_CONCURRENCY} at a time as resume() sends them, with nothing stored, right after each resume(): the network's own share, and the target's yardstick. Each size is measured ${data.settings.scaleRounds} times (seed, list(), resume(), POSTs); the times are medians and the ratio's range is the lowest and highest round. At ${integer(data.scale[0]?.stored ?? 0)} intents only, to split the time: *resume(), no network* is resume() with a \`fetch\` that answers 201 at once (what is left is storage and orchestration).

${scaleTable}

${growth} ${split}

Where the renderer's time went during resume() over ${integer(profile.stored)} intents sent to the local server (Chromium's sampling profiler, every 500 µs, during the timed run above):

${profileTable}

${functionsTable}

## 4. Size budgets

Minified and gzipped as a user's bundler pays it: esbuild and gzip level 9, from the sources, the runtime dependency (idb-keyval) included, framework packages external. \`npm run size\` prints this and fails over budget; test/unit/size.test.ts checks the same figures in \`npm test\`.

${formatSizes(sizes)}

## Reproduce

\`\`\`sh
npm ci
npm run bench                     # all of it: ${integer(intents)} intents per variant and fault rate, about ${Math.round(data.seconds / 60)} minutes here
npm run bench -- --intents=500 --rounds=3 --scale-rounds=1 --scale=1000   # quicker
npm run size                      # sizes only
\`\`\`

Flags: \`--intents\` (per variant and fault rate), \`--browser-intents\` (per client in Chromium, over all rounds), \`--rounds\` (overhead rounds), \`--scale=1000,10000\`, \`--scale-rounds\`, \`--concurrency\`, \`--seed\`; \`--report\` renders this file and the chart again from bench/results.json without measuring. Chromium is Debian's \`/usr/bin/chromium\` (or \`CHROME_PATH\`), launched as the browser tests launch it (test/browser/harness.ts). The sources: bench/index.ts (the run) and bench/report.ts (this file), bench/server.ts and bench/server-process.ts (the contract server in its own process), bench/duplicates.ts and bench/variants.ts (the sweep), bench/faults.ts (the fault schedule), bench/overhead-node.ts, bench/page.ts and bench/browser.ts (Chromium), bench/size.ts, bench/chart.ts (echarts, server-side SVG).
`;
}
