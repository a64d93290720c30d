/*
 * The fault test: three server processes share one store (Redis or PostgreSQL), each reaching
 * it through a TCP fault proxy (latency, a stall of twice the lease, dropped connections,
 * resets); a random process is SIGKILLed and restarted every few seconds; a sendonce client
 * drives keyed orders with retries through an HTTP fault proxy in front of them (lost replies,
 * 503s before and after the work). A checker then reads the effects table: how many orders, how
 * many effects, how many orders took effect twice, how many of those were reported
 * (`'lease-lost'`), how many orders the client saw succeed without an effect, and how long the
 * client waited after a kill for the orders the killed process was running.
 *
 * `runFaults()` plays one mode on one store; `npm run test:faults` plays every pair for longer.
 */
import {fork, type ChildProcess} from 'node:child_process';
import {randomBytes} from 'node:crypto';
import {mkdtemp, readFile, rm} from 'node:fs/promises';
import {createServer, request as httpRequest, type Server} from 'node:http';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {fileURLToPath} from 'node:url';
import pg from 'pg';
import {createClient as createRedis} from 'redis';
import {createClient} from '../../src/index.js';
import {percentile} from '../../bench/stats.js';
import type {FaultServerMessage} from './fault-server.js';
import {TcpFaultProxy, type StoreFault} from './tcp-fault-proxy.js';

export interface FaultRunOptions {
	mode: 'transactional' | 'lease';
	store: 'redis' | 'postgres';
	/** The Redis client the servers use, at its defaults. @default 'node-redis' */
	redisClient?: 'node-redis' | 'ioredis';
	/**
	 * `everything`: kills, stalls, latency, drops, resets and a faulty network. `cuts`: only cut
	 * connections (one right after a command was forwarded, a drop, a reset) and the faulty network,
	 * no kill and no stall: then no lease can run out, so any 409 the servers answer is a phantom
	 * holder's and any `'lease-lost'` report is false. @default 'everything'
	 */
	play?: 'everything' | 'cuts';
	/**
	 * The client checks instead of retrying (issue 33): two attempts, then `intent.check()` until it
	 * settles, with a Retry where the server cannot tell; the servers answer checks (`clockSkew` 0:
	 * one machine, one clock), and a third of requests are lost before them, so that many orders end
	 * "not sent". @default false
	 */
	check?: boolean;
	seconds: number;
	redisUrl: string;
	databaseUrl: string;
	/** The lease in lease mode, ms; a stall lasts twice as long. @default 1000 */
	lease?: number;
	/** Users placing orders at once, one after another each. @default 8 */
	users?: number;
	/** Seconds between two kills, on average. @default 4, or a third of a shorter run (so that every run has kills) */
	killEvery?: number;
	/** Seconds between two store faults, on average. @default 3 */
	faultEvery?: number;
	log?: (line: string) => void;
}

export interface FaultRunResult {
	name: string;
	mode: FaultRunOptions['mode'];
	play: NonNullable<FaultRunOptions['play']>;
	/** Whether the store's client pairs every reply with its command (all but node-redis, which after some cuts does not). */
	pairsReplies: boolean;
	/** 409s the servers answered. */
	conflicts: number;
	orders: number;
	succeeded: number;
	unresolved: number;
	effects: number;
	/** Orders with more than one effect. */
	duplicates: number;
	/** Of those, the ones whose every earlier run's claim a `'lease-lost'` report names (by key and fence). */
	reported: number;
	/** Orders the client saw succeed that have no effect. */
	lost: number;
	kills: number;
	storeFaults: number;
	lostLeaseReports: number;
	/** Per order a killed process was running: ms from the kill to the client's next 2xx for it. */
	recoveries: number[];
	/** Orders a killed process was running that got no 2xx afterwards (the client gave up). */
	unrecovered: number;
	/** Each order that took effect twice without every earlier run reported: its runs' fences and its key's reports. */
	silent: string[];
	/** With `check`: orders a check settled, by what it found; and those told "not sent" that took effect. */
	checked?: {succeeded: number; notSent: number; notSentWithEffect: number};
	seconds: number;
}

const SERVER = fileURLToPath(new URL('fault-server.ts', import.meta.url));
const sleep = async (ms: number) => new Promise(resolve => setTimeout(resolve, ms));
const jitter = (mean: number) => mean * (0.5 + Math.random());

interface Running {
	child: ChildProcess;
	url: string;
	/** Keys whose handler started here and has not finished. */
	inFlight: Set<string>;
}

/** The HTTP front: picks a live server per request and injects faults around it. */
class Front {
	readonly servers: Running[] = [];
	/** Per key, when the client got a 2xx for it through the front. */
	readonly successes = new Map<string, number[]>();
	/** How many 409s the servers answered. */
	conflicts = 0;
	readonly #server: Server;
	url = '';

	/** `before`: the share of requests answered 503 before any server sees them. */
	constructor(before = 0.05) {
		this.#server = createServer((incoming, outgoing) => {
			// The other faults keep their shares: a lost reply, a 503 after the work.
			const roll = Math.random() - before + 0.05;
			if (roll < 0.05 || this.servers.length === 0) {
				outgoing.writeHead(503, {'retry-after': '0'}).end();
				return;
			}

			const target = this.servers[Math.floor(Math.random() * this.servers.length)]!;
			const key = String(incoming.headers['idempotency-key'] ?? '');
			const forward = httpRequest(new URL(incoming.url ?? '/', target.url), {method: incoming.method, headers: incoming.headers}, answer => {
				const chunks: Buffer[] = [];
				answer.on('data', (chunk: Buffer) => chunks.push(chunk));
				answer.on('error', () => incoming.socket.destroy());
				answer.on('end', () => {
					if (roll < 0.13) {
						// The work is done; its reply is lost on the way back.
						incoming.socket.destroy();
						return;
					}

					if (roll < 0.18) {
						outgoing.writeHead(503).end();
						return;
					}

					const status = answer.statusCode ?? 502;
					if (status === 409) this.conflicts++;
					// A check's 200 is no answer to the order.
					if (status >= 200 && status < 300 && incoming.headers['idempotency-check'] === undefined) this.successes.set(key, [...this.successes.get(key) ?? [], Date.now()]);
					outgoing.writeHead(status, answer.headers).end(Buffer.concat(chunks));
				});
			});
			forward.on('error', () => incoming.socket.destroy());
			incoming.pipe(forward);
		});
		this.#server.keepAliveTimeout = 60_000;
	}

	async listen(): Promise<void> {
		await new Promise<void>(resolve => this.#server.listen(0, '127.0.0.1', resolve));
		this.url = `http://127.0.0.1:${(this.#server.address() as {port: number}).port}`;
	}

	async close(): Promise<void> {
		this.#server.closeAllConnections();
		await new Promise<void>(resolve => {
			this.#server.close(() => resolve());
		});
	}
}

function through(url: string, port: number): string {
	const parsed = new URL(url);
	parsed.hostname = '127.0.0.1';
	parsed.port = String(port);
	return parsed.toString();
}

/** Plays one mode on one store under faults, and reads what came of every order. */
export async function runFaults(options: FaultRunOptions): Promise<FaultRunResult> {
	const {mode, store, seconds, redisUrl, databaseUrl, redisClient = 'node-redis', play = 'everything', check = false, users = 8, killEvery = Math.min(4, seconds / 3), log = () => undefined} = options;
	// Cuts are cheap, and must meet every kind of command in flight: many of them.
	const faultEvery = options.faultEvery ?? (play === 'cuts' ? 0.25 : 3);
	// With cuts only, a lease long enough that reconnecting never outlasts it.
	const lease = options.lease ?? (play === 'cuts' ? 3000 : 1000);
	const name = `${mode} on ${store === 'redis' ? `Redis (${redisClient})` : 'PostgreSQL'}${play === 'cuts' ? ', cuts only' : ''}${check ? ', checks instead of retries' : ''}`;
	const run = randomBytes(4).toString('hex');
	const table = `sendonce_faults_${run}`;
	const effectsTable = `sendonce_faults_effects_${run}`;
	const prefix = `sendonce-faults:${run}:`;
	const folder = await mkdtemp(join(tmpdir(), 'sendonce-faults-'));
	const reports = join(folder, 'reports.jsonl');

	const database = new pg.Pool({connectionString: databaseUrl});
	await database.query(`CREATE TABLE "${effectsTable}" (order_id text NOT NULL, key text NOT NULL, pid int NOT NULL, fence bigint, at timestamptz NOT NULL DEFAULT clock_timestamp())`);
	const upstream = new URL(store === 'redis' ? redisUrl : databaseUrl);
	const proxy = await new TcpFaultProxy({host: upstream.hostname, port: Number(upstream.port || (store === 'redis' ? 6379 : 5432))}).listen();
	const front = new Front(check ? 0.33 : 0.05);
	await front.listen();

	const environment = {
		MODE: mode,
		STORE: store,
		STORE_URL: through(store === 'redis' ? redisUrl : databaseUrl, proxy.port),
		EFFECTS_URL: databaseUrl,
		TABLE: table,
		PREFIX: prefix,
		EFFECTS_TABLE: effectsTable,
		LEASE: String(lease),
		REPORTS: reports,
		REDIS_CLIENT: redisClient,
		...check ? {CLOCK_SKEW: '0'} : {},
	};
	const everyChild = new Set<ChildProcess>();
	const start = async (): Promise<Running> => {
		const child = fork(SERVER, {execArgv: ['--import', 'tsx'], env: {...process.env, ...environment}, stdio: ['ignore', 'ignore', 'inherit', 'ipc']});
		everyChild.add(child);
		const running: Running = {child, url: '', inFlight: new Set()};
		child.on('message', (message: FaultServerMessage) => {
			if (message.type === 'started') running.inFlight.add(message.key);
			if (message.type === 'finished') running.inFlight.delete(message.key);
		});
		running.url = await new Promise<string>((resolve, reject) => {
			child.on('message', (message: FaultServerMessage) => {
				if (message.type === 'listening') resolve(message.url);
			});
			child.once('exit', code => reject(new Error(`a fault-test server exited before it listened (${code})`)));
		});
		return running;
	};

	// The table is made by the first process, before the others race for it.
	front.servers.push(await start());
	front.servers.push(...await Promise.all([start(), start()]));

	const kills: Array<{at: number; keys: string[]}> = [];
	let storeFaults = 0;
	let playing = true;
	const deadline = Date.now() + seconds * 1000;

	const killer = (async () => {
		while (playing && play === 'everything') {
			await sleep(jitter(killEvery * 1000));
			if (!playing || front.servers.length === 0) break;
			const victim = front.servers.splice(Math.floor(Math.random() * front.servers.length), 1)[0]!;
			kills.push({at: Date.now(), keys: [...victim.inFlight]});
			victim.child.kill('SIGKILL');
			log(`killed ${victim.child.pid} with ${victim.inFlight.size} handlers running`);
			await sleep(500 + Math.random() * 500);
			front.servers.push(await start());
		}
	})();

	const cuts: StoreFault[] = [{type: 'lose-reply'}, {type: 'drop'}, {type: 'reset'}];
	const faults: StoreFault[] = play === 'cuts' ? cuts : [{type: 'latency', ms: 100, for: 2000}, {type: 'stall', for: 2 * lease}, ...cuts];
	const saboteur = (async () => {
		while (playing) {
			await sleep(jitter(faultEvery * 1000));
			if (!playing) break;
			const fault = faults[Math.floor(Math.random() * faults.length)]!;
			proxy.inject(fault);
			storeFaults++;
			log(`store fault: ${fault.type}`);
		}
	})();

	const client = createClient({store: 'memory', timeout: 3000, retry: {limit: check ? 2 : 12, baseDelay: 50, maxDelay: 1000, budget: false}, ...check && {checks: true}});
	const orders = new Map<string, {key: string; status: string}>();
	const checked = {succeeded: 0, notSent: 0};
	await Promise.all(Array.from({length: users}, async (_, user) => {
		for (let serial = 0; Date.now() < deadline; serial++) {
			const order = `o-${user}-${serial}`;
			const intent = await client.intent(`order-${order}`, {url: `${front.url}/orders`, json: {order}});
			let status: string = (await intent.send()).status;
			// As a user would: "Check whether it arrived", again while the server cannot be reached or
			// still runs it, and Retry (the same key) where it ran and kept no answer, or cannot tell.
			for (let round = 0; check && status === 'unresolved' && round < 60; round++) {
				const found = await intent.check();
				if (found.status === 'unknown' && found.reason !== 'no-answer') status = (await intent.send()).status;
				else if (found.status === 'running' || found.status === 'unknown') await sleep(100);
				else {
					status = found.status;
					if (status === 'succeeded') checked.succeeded++;
					if (status === 'not-sent') checked.notSent++;
				}
			}

			orders.set(order, {key: intent.key, status});
		}
	}));

	playing = false;
	await Promise.all([killer, saboteur]);
	proxy.heal();
	// Handlers a client gave up on may still be running: they end within a lease or two.
	const quiet = Date.now() + 30_000;
	while (Date.now() < quiet && front.servers.some(server => server.inFlight.size > 0)) await sleep(100);
	await sleep(2 * lease);

	const {rows} = await database.query(`SELECT order_id, count(*)::int AS effects, array_agg(fence::text ORDER BY fence) AS fences, array_agg(pid || '@' || to_char(at, 'MI:SS.MS') || ' key ' || key ORDER BY fence) AS runs FROM "${effectsTable}" GROUP BY order_id`);
	const runsOf = new Map(rows.map(row => [row.order_id as string, row.runs as string[]]));
	const effectsOf = new Map(rows.map(row => [row.order_id as string, row.effects as number]));
	const fencesOf = new Map(rows.map(row => [row.order_id as string, row.fences as Array<string | null>]));
	const lines = (await readFile(reports, 'utf8').catch(() => '')).split('\n').filter(Boolean).map(line => JSON.parse(line) as {key: string; phase: string; fence?: number; pid?: number; error?: string});
	// The claims reported as having lost their lease, by key and fence.
	const reportedClaims = new Set(lines.filter(line => line.phase === 'lease-lost').map(line => `${line.key} ${line.fence}`));

	let duplicates = 0;
	let reported = 0;
	const silent: string[] = [];
	let lost = 0;
	let notSentWithEffect = 0;
	for (const [order, {key, status}] of orders) {
		const count = effectsOf.get(order) ?? 0;
		if (count > 1) {
			duplicates++;
			// Every run but the last was a claim that lost its lease: each must have been reported, by its fence.
			const earlier = fencesOf.get(order)!.slice(0, -1);
			if (earlier.every(fence => fence !== null && reportedClaims.has(`${key} ${fence}`))) reported++;
			else silent.push(`${order}: runs with fences ${fencesOf.get(order)!.join(', ')} (pid@time ${runsOf.get(order)!.join(', ')}); reports for its key: ${lines.filter(line => line.key === key).map(line => JSON.stringify(line)).join(', ') || 'none'}`);
		}

		if (status === 'succeeded' && count === 0) lost++;
		if (status === 'not-sent' && count > 0) notSentWithEffect++;
	}

	if (store === 'redis' && process.env.KEEP_TRACE) {
		const redis = await createRedis({url: redisUrl}).connect();
		for (const [index, line] of silent.entries()) {
			const order = line.slice(0, line.indexOf(':'));
			const hash = await redis.hGetAll(`${prefix}${orders.get(order)!.key}`);
			silent[index] = `${line}; the key now: ${JSON.stringify({...hash, a: hash.a ? 'answer' : undefined})}; client: ${orders.get(order)!.status}`;
		}

		redis.destroy();
	}

	const recoveries: number[] = [];
	let unrecovered = 0;
	for (const {at, keys} of kills) {
		for (const key of keys) {
			const next = front.successes.get(key)?.find(time => time > at);
			if (next === undefined) unrecovered++;
			else recoveries.push(next - at);
		}
	}

	for (const child of everyChild) child.kill('SIGKILL');
	await front.close();
	await proxy.close();
	await database.query(`DROP TABLE IF EXISTS "${effectsTable}"`);
	if (store === 'postgres') await database.query(`DROP TABLE IF EXISTS "${table}"`);
	await database.end();
	if (store === 'redis') {
		const redis = await createRedis({url: redisUrl}).connect();
		for await (const keys of redis.scanIterator({MATCH: `${prefix}*`})) if (keys.length > 0) await redis.del(keys);
		redis.destroy();
	}

	if (process.env.KEEP_TRACE) console.log('trace kept in', folder); else await rm(folder, {recursive: true, force: true});
	const statuses = [...orders.values()].map(({status}) => status);
	return {
		name,
		mode,
		play,
		pairsReplies: store !== 'redis' || redisClient === 'ioredis',
		conflicts: front.conflicts,
		orders: orders.size,
		succeeded: statuses.filter(status => status === 'succeeded').length,
		unresolved: statuses.filter(status => status !== 'succeeded').length,
		effects: [...effectsOf.values()].reduce((total, count) => total + count, 0),
		duplicates,
		reported,
		lost,
		kills: kills.length,
		storeFaults,
		lostLeaseReports: lines.filter(line => line.phase === 'lease-lost').length,
		recoveries,
		unrecovered,
		seconds,
		silent,
		...check && {checked: {...checked, notSentWithEffect}},
	};
}

/**
 * What each run must show: no duplicate and no lost order in transactional mode; no silent
 * duplicate and no lost order in lease mode; with cuts only, no duplicate, no 409 and no
 * `'lease-lost'` report at all (nothing there can take a claim over).
 */
export function verdicts(result: FaultRunResult): Array<{name: string; passed: boolean}> {
	const checks = [
		{name: `${result.name}: every order the client saw succeed has its effect (lost: ${result.lost})`, passed: result.lost === 0},
		...result.checked ? [
			{name: `${result.name}: no order a check said was not sent took effect (${result.checked.notSentWithEffect} of ${result.checked.notSent})`, passed: result.checked.notSentWithEffect === 0},
			{name: `${result.name}: checks settled orders both ways (${result.checked.succeeded} found done, ${result.checked.notSent} not sent)`, passed: result.checked.succeeded > 0 && result.checked.notSent > 0},
		] : [],
		result.play === 'cuts'
			? {name: `${result.name}: orders were placed and connections cut (${result.orders} orders, ${result.storeFaults} cuts)`, passed: result.orders > 0 && result.storeFaults > 0}
			: {name: `${result.name}: orders were placed and kills happened (${result.orders} orders, ${result.kills} kills)`, passed: result.orders > 0 && result.kills > 0},
	];
	if (result.play === 'cuts' && !result.pairsReplies) {
		// node-redis hands some calls the replies of others after a cut (docs/server.md, Redis): the
		// store believes none and sends its call again, but one whose every reply is another's fails,
		// and a claim it made holds its key for a lease. The lease-mode promise still holds.
		return [
			...checks,
			{name: `${result.name}: every order that took effect twice was reported as 'lease-lost' (${result.reported} of ${result.duplicates}; 409s from calls answered with others' replies: ${result.conflicts}, 'lease-lost' reports: ${result.lostLeaseReports})`, passed: result.reported === result.duplicates},
		];
	}

	if (result.play === 'cuts') {
		return [
			...checks,
			{name: `${result.name}: no order took effect twice (duplicates: ${result.duplicates})`, passed: result.duplicates === 0},
			{name: `${result.name}: no phantom holder answered 409 (409s: ${result.conflicts})`, passed: result.conflicts === 0},
			{name: `${result.name}: no false 'lease-lost' report (reports: ${result.lostLeaseReports})`, passed: result.lostLeaseReports === 0},
		];
	}

	if (result.mode === 'transactional') checks.push({name: `${result.name}: no order took effect twice (duplicates: ${result.duplicates})`, passed: result.duplicates === 0});
	else checks.push({name: `${result.name}: every order that took effect twice was reported as 'lease-lost' (${result.reported} of ${result.duplicates})`, passed: result.reported === result.duplicates});
	return checks;
}

const ms = (value: number) => (Number.isNaN(value) ? '—' : `${Math.round(value)} ms`);

/** The runs as a Markdown table. */
export function table(results: FaultRunResult[]): string {
	const rows = results.map(result => `| ${result.name} | ${result.seconds} s | ${result.orders} | ${result.succeeded} / ${result.unresolved} | ${result.effects} | ${result.duplicates} | ${result.reported} | ${result.lost} | ${result.kills} / ${result.storeFaults} | ${ms(percentile(result.recoveries, 0.5))} / ${ms(percentile(result.recoveries, 0.95))} (${result.recoveries.length}${result.unrecovered ? `, ${result.unrecovered} gave up` : ''}) |`);
	return [
		'| mode and store | run | orders | succeeded / unresolved | effects | duplicates | reported | lost | kills / store faults | recovery after a kill p50 / p95 (orders) |',
		'| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
		...rows,
	].join('\n');
}
