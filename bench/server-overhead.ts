/*
 * `npm run bench:server:overhead`: what `sendonce/server` costs per request, latency at one connection
 * included (`npm run bench:server` compares it with its peers: bench/server-peers.ts). A trivial handler is served
 * bare and wrapped by `idempotency()` on memory, Redis and Postgres, each in a process of its
 * own (bench/server-target.ts); this process is the load generator, over loopback with
 * keep-alive connections. Two workloads: first requests (a new key each time: claim, handler,
 * store the answer) and replays (one key, answered from the store); each at one connection
 * (latency: no queueing, so p50 is the time one request costs) and at `--connections`
 * (throughput). Each variant runs `--runs` times, the variants interleaved so that drift hits
 * them alike; the report gives the median run and the spread (min–max over runs). Writes a
 * section of bench/RESULTS.md.
 *
 * Flags: --seconds=3 (per measurement), --connections=16, --runs=3.
 */
import {fork, type ChildProcess} from 'node:child_process';
import {randomBytes, randomUUID} from 'node:crypto';
import {Agent} from 'node:http';
import os from 'node:os';
import {readFile, writeFile} from 'node:fs/promises';
import {fileURLToPath} from 'node:url';
import pg from 'pg';
import {createClient} from 'redis';
import {postgresAnswers, redisAnswers} from '../test/server-half/services.js';
import {numberFlag, postOrder} from './order-requests.js';
import {median, ms, percentile, table} from './stats.js';


const SECONDS = numberFlag('seconds', 3);
const CONNECTIONS = numberFlag('connections', 16);
const RUNS = numberFlag('runs', 3);
const WARMUP_MS = 1000;
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const RUN_ID = randomBytes(4).toString('hex');
const PREFIX = `sendonce-bench:${RUN_ID}:`;
const TABLE = `sendonce_bench_${RUN_ID}`;
const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));

type Variant = 'bare' | 'memory' | 'redis' | 'postgres' | 'bare-tx' | 'transactional';
type Workload = 'first requests' | 'replays';

interface Run {
	rps: number;
	p50: number;
	p99: number;
}

async function startTarget(variant: Variant): Promise<{child: ChildProcess; url: string}> {
	const child = fork(here('server-target.ts'), {execArgv: ['--import', 'tsx'], env: {...process.env, VARIANT: variant, REDIS_URL, DATABASE_URL, PREFIX, TABLE}});
	const url = await new Promise<string>((resolve, reject) => {
		child.once('message', (message: {url: string}) => resolve(message.url));
		child.once('exit', code => reject(new Error(`the ${variant} server exited (${code})`)));
	});
	return {child, url};
}

const BODY = JSON.stringify({item: 'book', quantity: 1, total: 42});

/** `connections` loops sending one request after another for `duration` ms; their latencies. */
async function load(url: string, workload: Workload, duration: number, connections: number): Promise<{latencies: number[]; seconds: number; failures: number}> {
	const agent = new Agent({keepAlive: true, maxSockets: connections});
	const replayKey = randomUUID();
	if (workload === 'replays') await postOrder(agent, url, replayKey, BODY);
	const latencies: number[] = [];
	let failures = 0;
	const started = performance.now();
	const end = started + duration;
	await Promise.all(Array.from({length: connections}, async () => {
		while (performance.now() < end) {
			const begin = performance.now();
			const status = await postOrder(agent, url, workload === 'replays' ? replayKey : randomUUID(), BODY);
			latencies.push(performance.now() - begin);
			if (status !== 201) failures++;
		}
	}));
	const seconds = (performance.now() - started) / 1000;
	agent.destroy();
	return {latencies, seconds, failures};
}

/** One server process: the workload at one connection, then at `CONNECTIONS`. */
async function measure(variant: Variant, workload: Workload): Promise<{latency: Run; throughput: Run}> {
	const {child, url} = await startTarget(variant);
	try {
		const at = async (connections: number): Promise<Run> => {
			await load(url, workload, WARMUP_MS, connections);
			const {latencies, seconds, failures} = await load(url, workload, SECONDS * 1000, connections);
			if (failures > 0) throw new Error(`${variant}, ${workload}: ${failures} answers were not 201`);
			const sorted = latencies.sort((a, b) => a - b);
			return {rps: latencies.length / seconds, p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99)};
		};

		return {latency: await at(1), throughput: await at(CONNECTIONS)};
	} finally {
		child.kill();
	}
}

async function cleanUp(variants: Variant[]): Promise<void> {
	if (variants.includes('redis')) {
		const client = await createClient({url: REDIS_URL}).connect();
		for await (const keys of client.scanIterator({MATCH: `${PREFIX}*`, COUNT: 1000})) if (keys.length > 0) await client.del(keys);
		client.destroy();
	}

	if (variants.includes('postgres') || variants.includes('transactional')) {
		const pool = new pg.Pool({connectionString: DATABASE_URL});
		await pool.query(`DROP TABLE IF EXISTS "${TABLE}", "${TABLE}_orders"`);
		await pool.end();
	}
}

const spread = (values: number[], format: (value: number) => string) => `${format(Math.min(...values))}–${format(Math.max(...values))}`;
const rate = (value: number) => Math.round(value).toLocaleString('en-US');

const variants: Variant[] = ['bare', 'memory'];
const missing: string[] = [];
if (await redisAnswers(REDIS_URL)) variants.push('redis');
else missing.push(`Redis (${REDIS_URL})`);
if (await postgresAnswers(DATABASE_URL)) variants.push('postgres', 'bare-tx', 'transactional');
else missing.push(`PostgreSQL (${DATABASE_URL})`);
if (missing.length > 0) console.log(`skipped: no ${missing.join(', no ')}`);

const workloads: Workload[] = ['first requests', 'replays'];
const results = new Map<string, {latency: Run[]; throughput: Run[]}>();
const loadBefore = os.loadavg();
const begun = performance.now();
console.log(`sendonce/server overhead: ${RUNS} runs × ${SECONDS} s per variant, workload and concurrency (1 and ${CONNECTIONS} connections).\n`);
try {
	for (let run = 0; run < RUNS; run++) {
		// Rotate the order per run, so that no variant always goes first.
		const order = variants.map((_, index) => variants[(index + run) % variants.length]!);
		for (const workload of workloads) {
			for (const variant of order) {
				if ((variant === 'bare' || variant === 'bare-tx') && workload === 'replays') continue;
				const figures = await measure(variant, workload);
				const name = `${variant}|${workload}`;
				const kept = results.get(name) ?? {latency: [], throughput: []};
				kept.latency.push(figures.latency);
				kept.throughput.push(figures.throughput);
				results.set(name, kept);
				console.log(`  run ${run + 1}: ${variant.padEnd(8)} ${workload.padEnd(14)} 1 connection: p50 ${ms(figures.latency.p50)} ms, p99 ${ms(figures.latency.p99)} ms; ${CONNECTIONS} connections: ${rate(figures.throughput.rps)} req/s, p99 ${ms(figures.throughput.p99)} ms`);
			}
		}
	}
} finally {
	await cleanUp(variants);
}

const figure = (runs: Run[], pick: (run: Run) => number, format: (value: number) => string) => `${format(median(runs.map(pick)))} (${spread(runs.map(pick), format)})`;
// The transactional rows compare with the bare route that does the same work in a bare transaction.
const bareOf = (name: string) => (name.startsWith('transactional') || name.startsWith('bare-tx') ? 'bare-tx|first requests' : 'bare|first requests');
const bareLatency = (name: string) => median(results.get(bareOf(name))?.latency.map(run => run.p50) ?? [Number.NaN]);
const label = (name: string) => {
	const [variant, workload] = name.split('|') as [Variant, Workload];
	if (variant === 'bare') return ['bare (no idempotency)', '–'];
	if (variant === 'bare-tx') return ['bare, one row in a transaction', '–'];
	if (variant === 'transactional') return ['idempotency(), postgresTransactional, the same row', workload];
	return [`idempotency(), ${variant}`, workload];
};

const latencyTable = table(['server', 'workload', 'p50 ms (spread)', 'p99 ms (spread)', 'p50 − bare, ms'], [...results].map(([name, {latency}]) => {
	const p50 = median(latency.map(run => run.p50));
	const over = p50 - bareLatency(name);
	return [...label(name), figure(latency, run => run.p50, ms), figure(latency, run => run.p99, ms), name.startsWith('bare') ? '' : `${over >= 0 ? '+' : '−'}${ms(Math.abs(over))}`];
}), ['l', 'l', 'r', 'r', 'r']);
const throughputTable = table(['server', 'workload', 'requests/s (spread)', 'p50 ms (spread)', 'p99 ms (spread)'], [...results].map(([name, {throughput}]) =>
	[...label(name), figure(throughput, run => run.rps, rate), figure(throughput, run => run.p50, ms), figure(throughput, run => run.p99, ms)]), ['l', 'l', 'r', 'r', 'r']);
const figures = `**Latency**, one connection (each request sent when the last is answered: no queueing):\n\n${latencyTable}\n\n**Throughput**, ${CONNECTIONS} connections:\n\n${throughputTable}`;
const load1 = (values: number[]) => values.map(value => value.toFixed(2)).join(' / ');
const section = `<!-- bench:server -->
## sendonce/server: overhead per request

Measured ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC by \`npm run bench:server:overhead\` (${((performance.now() - begun) / 60_000).toFixed(1)} minutes) on ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown CPU'}), Node ${process.version}; load average ${load1(loadBefore)} before, ${load1(os.loadavg())} after.${Math.max(loadBefore[0]!, os.loadavg()[0]!) > os.cpus().length ? ' The load was above the number of cores: other processes competed for them during the run, so the spreads are wide and differences well under a millisecond are within the noise.' : ''}${missing.length > 0 ? ` Not measured: no ${missing.join(', no ')}.` : ''}

A trivial handler (201, a small JSON body) served from \`node:http\` through \`toNodeHandler\`, bare or wrapped by \`idempotency()\` on each store, the server in a process of its own; this bench's process is the load generator, keep-alive connections on loopback, each sending its next request when the last one is answered. *First requests* carry a new key each (a claim, the handler, the answer stored: two store round trips); *replays* repeat one key (one round trip, the handler not run). The transactional rows write one row per request in a PostgreSQL transaction, and are compared with a bare route that does the same (\`BEGIN\`, \`INSERT\`, \`COMMIT\`): with \`postgresTransactional\` the claim rides with \`BEGIN\` and the answer is one more \`UPDATE\`, so a first request costs one round trip more; a replay costs \`BEGIN\` with the claim, then \`ROLLBACK\`. ${RUNS} runs of ${SECONDS} s per row and concurrency after 1 s of warm-up, the rows interleaved; each figure is the median run, with the min–max over runs in brackets. Redis and PostgreSQL run on the same ${os.cpus().length} cores as the server and the load generator, so their rows include that contention: read them as this machine's.

${figures}
<!-- /bench:server -->`;

console.log(`\n${figures}\n`);
const path = here('RESULTS.md');
const current = await readFile(path, 'utf8');
const marked = /<!-- bench:server -->[\s\S]*<!-- \/bench:server -->/;
await writeFile(path, marked.test(current) ? current.replace(marked, section) : `${current.trimEnd()}\n\n${section}\n`);
console.log('Wrote the sendonce/server section of bench/RESULTS.md.');
