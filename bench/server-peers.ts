/*
 * `npm run bench:server`: sendonce/server side by side with its peers, in the same run. One
 * `POST /orders` route with a trivial handler, on Express 4, Express 5 and a Fetch-standard
 * handler (served by `toNodeHandler`), bare or behind sendonce (memory, Redis, PostgreSQL
 * transactional), express-idempotency (its in-memory adapter; Redis), @node-idempotency (its
 * memory and Redis adapters) and Powertools idempotency (Redis): each in a process of its own
 * (bench/server-peers-target.ts). This process is the load generator: autocannon, `--connections`
 * keep-alive connections on loopback. Workloads: a new key each request (a small body, 1 KiB,
 * 100 KiB), replays of one key, and a burst (`--keys` keys one after another, `--burst` requests
 * of each at once: its time, and the route's runs per key, so every duplicate effect is counted).
 * Variants are rotated per round so that drift hits them alike; each figure is the median round
 * with the min–max over rounds. It prints each target of issue 23 with met / not met, and writes
 * the section of bench/RESULTS.md.
 *
 * Flags: --seconds=2 --rounds=3 --connections=16 --keys=200 --burst=50
 *        --only=<substring of a variant's name, comma-separated> --before=<a sendonce server entry
 *        to compare with, e.g. an older checkout's src/server.ts: adds `sendonce (before)` rows>
 *        --workloads=first,100 KiB (those only, no burst, no report: to profile a target, with
 *        TARGET_NODE_OPTIONS='--cpu-prof --cpu-prof-dir=…' in the environment)
 * KEEP_BYTES=1 in the environment: sendonce's Express routes keep the body's bytes in `req.rawBody`
 * (`express.json({verify})`), so the fingerprint hashes them instead of serialising `req.body`.
 */
import {fork, type ChildProcess} from 'node:child_process';
import {randomBytes, randomUUID} from 'node:crypto';
import {Agent} from 'node:http';
import os from 'node:os';
import {readFile, writeFile} from 'node:fs/promises';
import {fileURLToPath} from 'node:url';
import autocannon from 'autocannon';
import pg from 'pg';
import {createClient} from 'redis';
import {postgresAnswers, redisAnswers} from '../test/server-half/services.js';
import {argument, numberFlag, postOrder} from './order-requests.js';
import {median, table} from './stats.js';


const SECONDS = numberFlag('seconds', 2);
const ROUNDS = numberFlag('rounds', 3);
const CONNECTIONS = numberFlag('connections', 16);
const KEYS = numberFlag('keys', 200);
const BURST = numberFlag('burst', 50);
const ONLY = argument('only')?.split(',');
const BEFORE = argument('before');
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const RUN_ID = randomBytes(4).toString('hex');
const PREFIX = `sendonce-bench:${RUN_ID}:`;
const TABLE = `sendonce_bench_${RUN_ID}`;
const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));

type Framework = 'express4' | 'express5' | 'fetch';
type Peer = 'bare' | 'sendonce' | 'sendonce (before)' | 'express-idempotency' | 'node-idempotency' | 'powertools';
type Store = 'memory' | 'redis' | 'transactional';
interface Variant {
	framework: Framework;
	peer: Peer;
	store: Store;
}

type Workload = 'first' | 'replays' | '1 KiB' | '100 KiB';
const WORKLOADS = (process.argv.find(item => item.startsWith('--workloads='))?.slice(12).split(',') ?? ['first', 'replays', '1 KiB', '100 KiB']) as Workload[];
const BURST_TOO = !process.argv.some(item => item.startsWith('--workloads='));
const nameOf = ({framework, peer, store}: Variant) => `${framework} ${peer} ${store}`;

/** JSON of about `size` bytes as sendonce's client writes it (members sorted by name): a list of order lines. */
function orderBody(size: number): string {
	const lines: unknown[] = [];
	const body = {currency: 'EUR', customer: {email: 'ada@example.com', name: 'Ada Lovelace'}, lines, note: 'leave at the door'};
	for (let index = 0; JSON.stringify(body).length < size; index++) lines.push({price: 1999 + index, quantity: 1 + (index % 3), sku: `sku-${index}`, title: `Item number ${index}`});
	return JSON.stringify(body);
}

const BODIES: Record<Workload, string> = {first: JSON.stringify({item: 'book', quantity: 1, total: 42}), replays: JSON.stringify({item: 'book', quantity: 1, total: 42}), '1 KiB': orderBody(1024), '100 KiB': orderBody(100 * 1024)};

interface Stats {
	keys: number;
	runs: number;
	duplicates: number;
	most: number;
	statements: number;
	/** Per request: the SQL statements answered before its answer began (meaningful one at a time). */
	waited: number[];
}

class Target {
	private constructor(readonly child: ChildProcess, readonly url: string) {}

	static async start(variant: Variant): Promise<Target> {
		const sendonce = variant.peer === 'sendonce (before)' ? {SENDONCE: BEFORE} : {};
		const peer = variant.peer === 'sendonce (before)' ? 'sendonce' : variant.peer;
		const child = fork(here('server-peers-target.ts'), {execArgv: ['--import', 'tsx', ...(process.env.TARGET_NODE_OPTIONS ? process.env.TARGET_NODE_OPTIONS.split(' ') : [])], env: {...process.env, ...sendonce, FRAMEWORK: variant.framework, PEER: peer, STORE: variant.store, REDIS_URL, DATABASE_URL, PREFIX, TABLE}});
		const url = await new Promise<string>((resolve, reject) => {
			child.once('message', (message: {url: string}) => resolve(message.url));
			child.once('exit', code => reject(new Error(`${nameOf(variant)} exited (${code})`)));
		});
		return new Target(child, url);
	}

	async stats(): Promise<Stats> {
		return new Promise(resolve => {
			const listen = (message: Stats & {type?: string}) => {
				if (message.type !== 'stats') return;
				this.child.off('message', listen);
				resolve(message);
			};

			this.child.on('message', listen);
			this.child.send({type: 'stats'});
		});
	}

	async stop(): Promise<void> {
		const exited = new Promise(resolve => this.child.once('exit', resolve));
		this.child.disconnect();
		await exited;
	}
}

interface Load {
	rps: number;
	p50: number;
	failures: number;
	requests: number;
}

async function load(url: string, workload: Workload, seconds: number): Promise<Load> {
	const body = BODIES[workload];
	const headers = {'content-type': 'application/json'};
	let replayKey: string | undefined;
	if (workload === 'replays') {
		replayKey = randomUUID();
		const agent = new Agent();
		await postOrder(agent, url, replayKey, body);
		agent.destroy();
	}

	const result = await autocannon({
		url: `${url}/orders`,
		connections: CONNECTIONS,
		duration: seconds,
		requests: [{
			method: 'POST',
			path: '/orders',
			headers,
			body,
			setupRequest: (request: {headers: Record<string, string>}) => ({...request, headers: {...request.headers, 'idempotency-key': replayKey ?? randomUUID()}}),
		}],
	} as autocannon.Options);
	return {rps: result.requests.total / result.duration, p50: result.latency.p50, failures: result.non2xx + result.errors + result.timeouts, requests: result.requests.total};
}

interface Burst {
	seconds: number;
	statuses: Record<string, number>;
	stats: Stats;
}

/** `KEYS` keys one after another, `BURST` requests of each sent at once; the route's runs per key. */
async function burst(target: Target): Promise<Burst> {
	const agent = new Agent({keepAlive: true, maxSockets: BURST});
	// Open the connections first: the burst measures the claims, not TCP handshakes.
	await Promise.all(Array.from({length: BURST}, async () => postOrder(agent, target.url, randomUUID(), BODIES.first)));
	await target.stats();
	const statuses: Record<string, number> = {};
	const started = performance.now();
	for (let index = 0; index < KEYS; index++) {
		const key = randomUUID();
		const answers = await Promise.all(Array.from({length: BURST}, async () => postOrder(agent, target.url, key, BODIES.first)));
		for (const status of answers) statuses[status] = (statuses[status] ?? 0) + 1;
	}

	const seconds = (performance.now() - started) / 1000;
	agent.destroy();
	return {seconds, statuses, stats: await target.stats()};
}

/** Requests sent one at a time to see what a request waits for. */
const ALONE = 20;

/** {@link ALONE} first requests, then as many replays of one key, one at a time: the SQL round trips each waited for (median). */
async function alone(target: Target): Promise<Measured['waited']> {
	const agent = new Agent({keepAlive: true});
	const key = randomUUID();
	await target.stats();
	for (let index = 0; index < ALONE; index++) await postOrder(agent, target.url, index === 0 ? key : randomUUID(), BODIES.first);
	const first = (await target.stats()).waited;
	for (let index = 0; index < ALONE; index++) await postOrder(agent, target.url, key, BODIES.first);
	const replays = (await target.stats()).waited;
	agent.destroy();
	return {first: median(first), replays: median(replays)};
}

interface Measured {
	load: Partial<Record<Workload, Load>>;
	/** SQL round trips per request. */
	statements: Partial<Record<'first' | 'replays', number>>;
	/** SQL round trips a request waits for, sent one at a time (median of {@link ALONE}). */
	waited: Partial<Record<'first' | 'replays', number>>;
	burst?: Burst;
}

async function measure(variant: Variant): Promise<Measured> {
	const target = await Target.start(variant);
	const measured: Measured = {load: {}, statements: {}, waited: {}};
	try {
		// The first workload warms the process (its JIT, its connections) longer than the others.
		for (const [index, workload] of WORKLOADS.entries()) {
			await load(target.url, workload, index === 0 ? 2 : 1);
			await target.stats();
			const figures = await load(target.url, workload, SECONDS);
			const stats = await target.stats();
			if (figures.failures > 0) console.log(`    ${nameOf(variant)}, ${workload}: ${figures.failures} answers were not 2xx`);
			measured.load[workload] = figures;
			if (workload === 'first' || workload === 'replays') measured.statements[workload] = stats.statements / figures.requests;
		}

		if (variant.store === 'transactional') measured.waited = await alone(target);

		if (BURST_TOO) measured.burst = await burst(target);
	} finally {
		await target.stop();
	}

	return measured;
}

async function cleanUp(): Promise<void> {
	if (await redisAnswers(REDIS_URL)) {
		const client = await createClient({url: REDIS_URL}).connect();
		for await (const keys of client.scanIterator({MATCH: `${PREFIX}*`, COUNT: 1000})) if (keys.length > 0) await client.del(keys);
		client.destroy();
	}

	if (await postgresAnswers(DATABASE_URL)) {
		const pool = new pg.Pool({connectionString: DATABASE_URL});
		await pool.query(`DROP TABLE IF EXISTS "${TABLE}", "${TABLE}_orders"`);
		await pool.end();
	}
}

const haveRedis = await redisAnswers(REDIS_URL);
const havePostgres = await postgresAnswers(DATABASE_URL);
const variants: Variant[] = [];
const sendonces: Peer[] = BEFORE ? ['sendonce', 'sendonce (before)'] : ['sendonce'];
for (const framework of ['express4', 'express5', 'fetch'] as const) {
	variants.push({framework, peer: 'bare', store: 'memory'});
	for (const peer of sendonces) {
		// The version before is compared where the changes tell: memory, Express 4 and Fetch (a run takes long enough).
		if (peer === 'sendonce (before)' && framework === 'express5') continue;
		variants.push({framework, peer, store: 'memory'});
		if (haveRedis && peer === 'sendonce') variants.push({framework, peer, store: 'redis'});
	}

	if (framework !== 'fetch') {
		for (const peer of ['express-idempotency', 'node-idempotency'] as const) {
			variants.push({framework, peer, store: 'memory'});
			if (haveRedis) variants.push({framework, peer, store: 'redis'});
		}

		if (haveRedis) variants.push({framework, peer: 'powertools', store: 'redis'});
	}

	if (havePostgres) {
		variants.push({framework, peer: 'bare', store: 'transactional'});
		variants.push({framework, peer: 'sendonce', store: 'transactional'});
	}
}

const chosen = ONLY ? variants.filter(variant => ONLY.some(part => nameOf(variant).includes(part))) : variants;
const results = new Map<string, Measured[]>();
const loadAverages: number[][] = [os.loadavg()];
const begun = performance.now();
console.log(`sendonce/server and its peers: ${chosen.length} servers × ${ROUNDS} rounds; ${SECONDS} s per workload after 1 s of warm-up, ${CONNECTIONS} connections; a burst of ${KEYS} keys × ${BURST} at once.${haveRedis ? '' : ' No Redis.'}${havePostgres ? '' : ' No PostgreSQL.'}\n`);
const rate = (value: number) => Math.round(value).toLocaleString('en-US');
try {
	for (let round = 0; round < ROUNDS; round++) {
		// Rotate the order per round, so that no variant always goes first.
		const order = chosen.map((_, index) => chosen[(index + round * Math.max(1, Math.floor(chosen.length / ROUNDS))) % chosen.length]!);
		for (const variant of order) {
			const measured = await measure(variant);
			const name = nameOf(variant);
			results.set(name, [...results.get(name) ?? [], measured]);
			loadAverages.push(os.loadavg());
			const figures = WORKLOADS.map(workload => `${workload} ${rate(measured.load[workload]!.rps)}`).join(', ');
			console.log(`  round ${round + 1}: ${name.padEnd(40)} req/s: ${figures}; ${measured.burst ? `burst ${measured.burst.seconds.toFixed(1)} s, ${measured.burst.stats.duplicates} duplicate runs` : ''}`);
		}
	}
} finally {
	await cleanUp();
}

// ---- Report ---- (not for a run of some workloads only: a profile's)
if (!BURST_TOO) process.exit(0);
const runsOf = (variant: Variant) => results.get(nameOf(variant)) ?? [];
const rpsRuns = (variant: Variant, workload: Workload) => runsOf(variant).map(run => run.load[workload]!.rps);
const spreadText = (values: number[], format: (value: number) => string) => (values.length === 0 ? '–' : `${format(median(values))} (${format(Math.min(...values))}–${format(Math.max(...values))})`);
const bareOf = (variant: Variant): Variant => ({framework: variant.framework, peer: 'bare', store: variant.store === 'transactional' ? 'transactional' : 'memory'});
/** The bare route's req/s over the variant's, per round: how many times slower it is. */
const ratios = (variant: Variant, workload: Workload) => {
	const bare = rpsRuns(bareOf(variant), workload);
	return rpsRuns(variant, workload).map((rps, index) => (bare[index] ?? median(bare)) / rps);
};

const ratioText = (values: number[]) => (values.length === 0 ? '' : `${median(values).toFixed(2)}× (${Math.min(...values).toFixed(2)}–${Math.max(...values).toFixed(2)})`);
const burstDuplicates = (variant: Variant) => runsOf(variant).map(run => run.burst!.stats.duplicates);
const burstMost = (variant: Variant) => Math.max(...runsOf(variant).map(run => run.burst!.stats.most));
const label = ({framework, peer, store}: Variant) => [{express4: 'Express 4', express5: 'Express 5', fetch: 'Fetch'}[framework], peer, store === 'transactional' ? 'PostgreSQL, transactional' : store];
const measuredVariants = chosen.filter(variant => runsOf(variant).length > 0);

const throughputRows = measuredVariants.map(variant => [...label(variant), ...WORKLOADS.map(workload => `${spreadText(rpsRuns(variant, workload), rate)}${variant.peer === 'bare' ? '' : ` ${ratioText(ratios(variant, workload))}`}`)]);
const throughputTable = table(['framework', 'server', 'store', ...WORKLOADS.map(workload => `${workload === 'first' ? 'new key each' : workload === 'replays' ? 'replays' : `new key, ${workload} body`}: req/s (range) bare÷this`)], throughputRows, ['l', 'l', 'l', 'r', 'r', 'r', 'r']);
const burstRows = measuredVariants.map(variant => {
	const runs = runsOf(variant);
	const statuses: Record<string, number> = {};
	for (const run of runs) for (const [status, count] of Object.entries(run.burst!.statuses)) statuses[status] = (statuses[status] ?? 0) + count;
	const duplicates = burstDuplicates(variant);
	return [...label(variant), spreadText(runs.map(run => run.burst!.seconds), value => value.toFixed(2)), `${spreadText(duplicates, String)}${Math.max(...duplicates) > 0 ? `, up to ${burstMost(variant)} runs of one key` : ''}`, Object.entries(statuses).map(([status, count]) => `${status}: ${count}`).join(', ')];
});
const burstTable = table(['framework', 'server', 'store', `${KEYS} keys × ${BURST} at once: s (range)`, 'duplicate runs (range)', 'answers, all rounds'], burstRows, ['l', 'l', 'l', 'r', 'r', 'l']);
const sqlRows = measuredVariants.filter(variant => variant.store === 'transactional').map(variant => [
	...label(variant),
	...(['first', 'replays'] as const).map(workload => spreadText(runsOf(variant).map(run => run.statements[workload] ?? Number.NaN), value => value.toFixed(2))),
	...(['first', 'replays'] as const).map(workload => spreadText(runsOf(variant).map(run => run.waited[workload] ?? Number.NaN), value => value.toFixed(0))),
]);
const sqlTable = table(['framework', 'server', 'store', 'sent per first request', 'per replay', 'waited for by a first request, alone', 'by a replay'], sqlRows, ['l', 'l', 'l', 'r', 'r', 'r', 'r']);

// ---- Targets ----
/** No duplicate effect in any burst, and every replay answered (Powertools' Redis layer refuses them: its completed records lose their payload hash). */
const correct = (variant: Variant) => runsOf(variant).length > 0 && Math.max(...burstDuplicates(variant)) === 0 && runsOf(variant).every(run => (run.load.replays?.failures ?? 0) === 0);
const peersOf = (framework: Framework, store: Store) => measuredVariants.filter(variant => variant.framework === framework && variant.store === store && !['bare', 'sendonce', 'sendonce (before)'].includes(variant.peer));
const targetRows: string[][] = [];
const verdict = (met: boolean | undefined) => (met === undefined ? 'not measured' : met ? 'met' : 'not met');
for (const framework of ['express4', 'express5', 'fetch'] as const) {
	const ours = (store: Store): Variant => ({framework, peer: 'sendonce', store});
	for (const store of ['memory', 'redis'] as const) {
		// Fetch has no peers: its handler is held to the fastest correct peer on Express 4.
		const peerFramework = framework === 'fetch' ? 'express4' : framework;
		const fastestCorrect = (workload: Workload) => peersOf(peerFramework, store).filter(correct).map(peer => ({peer, rps: median(rpsRuns(peer, workload))})).sort((a, b) => b.rps - a.rps)[0];
		for (const workload of ['first', 'replays', '1 KiB'] as const) {
			if (runsOf(ours(store)).length === 0) continue;
			const best = fastestCorrect(workload);
			const mine = rpsRuns(ours(store), workload);
			targetRows.push([`${label(ours(store)).slice(0, 1)[0]}, ${store}, ${workload}: at least the fastest correct peer`, `${spreadText(mine, rate)} vs ${best ? `${best.peer.peer}${framework === 'fetch' ? ' (Express 4)' : ''} ${rate(best.rps)}` : 'no correct peer measured'}`, verdict(best ? median(mine) >= best.rps : undefined)]);
			if (store === 'memory') {
				const ratio = ratios(ours(store), workload);
				targetRows.push([`${label(ours(store))[0]}, memory, ${workload}: within 1.3× of bare`, ratioText(ratio), verdict(ratio.length > 0 ? median(ratio) <= 1.3 : undefined)]);
			}
		}
	}

	if (runsOf(ours('memory')).length > 0) {
		const ratio = ratios(ours('memory'), '100 KiB');
		targetRows.push([`${label(ours('memory'))[0]}, memory, 100 KiB body: within 1.5× of bare`, ratioText(ratio), verdict(median(ratio) <= 1.5)]);
		const peerFramework = framework === 'fetch' ? 'express4' : framework;
		for (const store of ['memory', 'redis'] as const) {
			if (runsOf(ours(store)).length === 0) continue;
			const best = peersOf(peerFramework, store).filter(correct).map(peer => ({peer, seconds: median(runsOf(peer).map(run => run.burst!.seconds))})).sort((a, b) => a.seconds - b.seconds)[0];
			const mine = runsOf(ours(store)).map(run => run.burst!.seconds);
			targetRows.push([`${label(ours(store))[0]}, ${store}, ${BURST} at once per key: no slower than the fastest correct peer`, `${spreadText(mine, value => `${value.toFixed(2)} s`)} vs ${best ? `${best.peer.peer} ${best.seconds.toFixed(2)} s` : 'no correct peer measured'}`, verdict(best ? median(mine) <= best.seconds : undefined)]);
		}
	}

	const tx = ours('transactional');
	if (runsOf(tx).length > 0) {
		const extra = (workload: 'first' | 'replays') => runsOf(tx).map((run, index) => (run.statements[workload] ?? Number.NaN) - (workload === 'first' ? (runsOf(bareOf(tx))[index]?.statements.first ?? 3) : 0));
		const first = extra('first');
		const replay = extra('replays');
		// Per request: the sweeper's statements (a few per second, in the background) come on top.
		targetRows.push([`${label(tx)[0]}, PostgreSQL transactional: one round trip per first request (beyond the route's own)`, spreadText(first, value => value.toFixed(2)), verdict(Math.round(median(first)) <= 1)]);
		// A replay's ROLLBACK is sent, and the connection held until it ends, but the answer does not wait for it.
		const waited = runsOf(tx).map(run => run.waited.replays ?? Number.NaN);
		targetRows.push([`${label(tx)[0]}, PostgreSQL transactional: a replay in one round trip (waited for, one at a time; ${spreadText(replay, value => value.toFixed(2))} sent under load)`, spreadText(waited, value => value.toFixed(0)), verdict(median(waited) <= 1)]);
	}
}

const targetTable = table(['target', 'median (range)', ''], targetRows, ['l', 'l', 'l']);
const loads = loadAverages.map(values => values[0]!);
const loadText = `load average (1 min) ${Math.min(...loads).toFixed(2)}–${Math.max(...loads).toFixed(2)}, median ${median(loads).toFixed(2)}, over the run`;
const figures = `**Throughput**, req/s with ${CONNECTIONS} connections (median round, min–max), and the bare route's req/s divided by this one's (PostgreSQL rows: by the bare route that writes the same row in a transaction):\n\n${throughputTable}\n\n**A burst**: ${KEYS} keys one after another, ${BURST} requests of each at once; how many times the route ran more than once per key (0 for a correct layer):\n\n${burstTable}\n\n**PostgreSQL**, statements sent per request under load (one round trip each; the bare route's own: BEGIN, INSERT, COMMIT), and those a request sent alone waited for before its answer began:\n\n${sqlTable}\n\n**Targets** (issue 23):\n\n${targetTable}`;
console.log(`\n${figures}\n\n${loadText}; ${((performance.now() - begun) / 60_000).toFixed(1)} minutes.`);

if (!ONLY) {
	const section = `<!-- bench:server-peers -->
## sendonce/server beside its peers

Measured ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC by \`npm run bench:server\` (${((performance.now() - begun) / 60_000).toFixed(1)} minutes) on ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown CPU'}), Node ${process.version}; ${loadText}. The load generator (autocannon), the servers, Redis and PostgreSQL share these cores.

${figures}
<!-- /bench:server-peers -->`;
	const path = here('RESULTS.md');
	const current = await readFile(path, 'utf8');
	const marked = /<!-- bench:server-peers -->[\s\S]*<!-- \/bench:server-peers -->/;
	await writeFile(path, marked.test(current) ? current.replace(marked, section) : `${current.trimEnd()}\n\n${section}\n`);
	console.log('Wrote the sendonce/server section of bench/RESULTS.md.');
}
