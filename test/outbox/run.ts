/*
 * The outbox chaos run: users press Send on the contact form (a sendonce client, retrying as a
 * page does) through an HTTP front that loses replies and answers 503s, against the example's
 * three processes (examples/outbox/chain.ts): the web process and the worker are SIGKILLed at
 * random moments (the worker also right after a mail server accepted its message, before the job
 * is marked done), the database goes away for 2 s now and then, and the mail server drops
 * connections and loses replies. Then it reads what
 * came of every press: its stored message (one per committed job), and what the mail server
 * received.
 *
 * `runOutbox()` plays it once; `npm run test:outbox -- --seconds=N` plays it longer.
 */
import {createServer, request as httpRequest} from 'node:http';
import pg from 'pg';
import {createClient} from '../../src/index.js';
import {startChain, type Chain} from '../../examples/outbox/chain.js';
import {freshDatabase} from './database.js';

export interface OutboxRunOptions {
	seconds: number;
	/** A PostgreSQL server: the run makes a database of its own there. */
	databaseUrl: string;
	/** Users pressing Send at once. @default 4 */
	users?: number;
	/** Seconds between two kills, on average. @default 3, or a tenth of a shorter run (its first three kinds within it, on a loaded machine too) */
	killEvery?: number;
	log?: (line: string) => void;
}

export interface OutboxRunResult {
	seconds: number;
	presses: number;
	/** Presses the client saw succeed (it presses Retry until then). */
	succeeded: number;
	/** Kills of the web process, of the worker at a random moment, of the worker after a hand-off, and outages of the database (2 s). */
	kills: {web: number; worker: number; afterHandOff: number; database: number};
	/** Stored messages, each committed with its one job. */
	jobs: number;
	/** Presses with other than one job. */
	notOneJob: string[];
	/** Messages the mail server received. */
	received: number;
	/** Messages received again with a Message-ID already received. */
	resent: number;
	/** Presses with no message received. */
	undelivered: string[];
	/** Presses whose messages carried more than one Message-ID or job. */
	mixed: string[];
	/** Message-IDs that contain the request's raw key. */
	rawKeys: number;
	/** Jobs left undone when the run gave up waiting for the queue. */
	jobsLeft: number;
}

const sleep = async (ms: number) => new Promise(resolve => setTimeout(resolve, ms));
const jitter = (mean: number) => mean * (0.5 + Math.random());

/** An HTTP front to the current web process: 5% 503s before it, 8% replies lost and 5% 503s after it. */
async function startFront(target: () => string): Promise<{url: string; close: () => Promise<void>}> {
	const server = createServer((incoming, outgoing) => {
		const roll = Math.random();
		if (roll < 0.05) {
			outgoing.writeHead(503, {'retry-after': '0'}).end();
			return;
		}

		const forward = httpRequest(new URL(incoming.url ?? '/', target()), {method: incoming.method, headers: incoming.headers}, answer => {
			const chunks: Buffer[] = [];
			answer.on('data', (chunk: Buffer) => chunks.push(chunk));
			answer.on('error', () => incoming.socket.destroy());
			answer.on('end', () => {
				if (roll < 0.13) incoming.socket.destroy();
				else if (roll < 0.18) outgoing.writeHead(503).end();
				else outgoing.writeHead(answer.statusCode ?? 502, answer.headers).end(Buffer.concat(chunks));
			});
		});
		forward.on('error', () => incoming.socket.destroy());
		incoming.pipe(forward);
	});
	await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve));
	return {
		url: `http://127.0.0.1:${(server.address() as {port: number}).port}`,
		close: async () => new Promise(resolve => {
			server.closeAllConnections();
			server.close(() => resolve());
		}),
	};
}

export async function runOutbox({seconds, databaseUrl, users = 4, killEvery = Math.min(3, seconds / 10), log = () => undefined}: OutboxRunOptions): Promise<OutboxRunResult> {
	const database = await freshDatabase(databaseUrl);
	let chain: Chain | undefined;
	let front: Awaited<ReturnType<typeof startFront>> | undefined;
	try {
		// A worker that exits is started again, as its supervisor would.
		chain = await startChain({databaseUrl: database.url, output: 'ignore', sink: {LOSE_REPLIES: '0.1', DROP_CONNECTIONS: '0.1'}, worker: {WORKER_CONCURRENCY: '8'}, keepWorker: true});
		const started = chain;
		front = await startFront(() => started.webUrl);
		const kills = {web: 0, worker: 0, afterHandOff: 0, database: 0};
		let playing = true;
		const deadline = Date.now() + seconds * 1000;
		// Kills at random moments, each kind in turn: every run of three or more has the web process and
		// the worker killed and the database away.
		const killer = (async () => {
			for (let turn = 0; playing; turn++) {
				await sleep(jitter(killEvery * 1000));
				if (!playing) break;
				const kind = turn % 4;
				if (kind === 0) {
					kills.web++;
					log('kill the web process');
					await started.restartWeb();
				} else if (kind === 1) {
					// PostgreSQL away for 2 s: the web process answers 5xx, and the worker cannot mark its jobs done.
					kills.database++;
					log('the database goes away for 2 s');
					await database.outage(2000);
				} else if (kind === 2) {
					// The worker dies right after the mail server accepts its next message: the job is sent again.
					kills.afterHandOff++;
					log('the worker dies after its next hand-off');
					started.tell('worker', 'die-after-send');
					await sleep(1000);
					await started.restartWorker();
				} else {
					kills.worker++;
					log('kill the worker');
					await started.restartWorker();
				}
			}
		})();

		const client = createClient({store: 'memory', timeout: 3000, retry: {limit: 6, baseDelay: 50, maxDelay: 500, budget: false}});
		const presses = new Map<string, {key: string; status: string}>();
		await Promise.all(Array.from({length: users}, async (_, user) => {
			for (let serial = 0; Date.now() < deadline; serial++) {
				const press = `press-${user}-${serial}`;
				const intent = await client.intent(press, {url: `${front!.url}/api/contact`, json: {name: press, email: `${press}@example.com`, message: `Hello from ${press}`}});
				let {status} = await intent.send();
				// As a user would: Retry (the same key) until it says sent.
				for (let round = 0; status !== 'succeeded' && round < 30; round++) {
					await sleep(200);
					status = (await intent.send()).status;
				}

				presses.set(press, {key: intent.key, status});
				// A person presses Send now and then: 4 users make some 20 presses a second at most.
				await sleep(jitter(200));
			}
		}));
		playing = false;
		await killer;

		// The queue drains, the mail server healed, and each job that waits for another attempt (2.7 s,
		// 7.4 s, 20 s… after its failures) run now: the checker's patience, not the guarantee.
		started.tell('sink', 'heal');
		let jobsLeft = await started.jobsLeft();
		for (const until = Date.now() + 30_000; jobsLeft > 0 && Date.now() < until; jobsLeft = await started.jobsLeft()) {
			await started.hurry();
			await sleep(250);
		}

		const db = new pg.Client({connectionString: database.url});
		await db.connect();
		const {rows} = await db.query<{name: string; jobs: number}>('SELECT name, count(*)::int AS jobs FROM contact_messages GROUP BY name');
		await db.end();
		const jobsOf = new Map(rows.map(row => [row.name, row.jobs]));
		const mail = await started.received();
		const mailOf = new Map<string, typeof mail>();
		for (const message of mail) {
			const press = message.subject?.replace(/^Message from /, '') ?? '';
			mailOf.set(press, [...mailOf.get(press) ?? [], message]);
		}

		const seenIds = new Set<string>();
		let resent = 0;
		for (const message of mail) {
			if (seenIds.has(message.messageId ?? '')) resent++;
			seenIds.add(message.messageId ?? '');
		}

		const statuses = [...presses.values()];
		return {
			seconds,
			presses: presses.size,
			succeeded: statuses.filter(({status}) => status === 'succeeded').length,
			kills,
			jobs: rows.reduce((total, row) => total + row.jobs, 0),
			notOneJob: [...presses.keys()].filter(press => jobsOf.get(press) !== 1).map(press => `${press}: ${jobsOf.get(press) ?? 0} jobs`),
			received: mail.length,
			resent,
			undelivered: [...presses.keys()].filter(press => !mailOf.has(press)),
			mixed: [...mailOf].filter(([, messages]) => new Set(messages.map(({messageId}) => messageId)).size > 1 || new Set(messages.map(({jobId}) => jobId)).size > 1).map(([press, messages]) => `${press}: ${messages.map(({messageId, jobId}) => `${messageId} (job ${jobId})`).join(', ')}`),
			rawKeys: mail.filter(({messageId}) => statuses.some(({key}) => messageId?.includes(key))).length,
			jobsLeft,
		};
	} finally {
		await front?.close();
		await chain?.close();
		await database.drop();
	}
}

/** What every run must show. */
export function verdicts(result: OutboxRunResult): Array<{name: string; passed: boolean}> {
	return [
		{name: `presses were made and every kind of kill happened (${result.presses} presses; kills: ${JSON.stringify(result.kills)})`, passed: result.presses > 0 && result.kills.web > 0 && result.kills.database > 0 && result.kills.worker + result.kills.afterHandOff > 0},
		{name: `every press ended sent (${result.succeeded} of ${result.presses})`, passed: result.succeeded === result.presses},
		{name: `every press has exactly one job (${result.jobs} jobs for ${result.presses} presses; other: ${result.notOneJob.join('; ') || 'none'})`, passed: result.notOneJob.length === 0 && result.jobs === result.presses},
		{name: `the queue drained (${result.jobsLeft} jobs left)`, passed: result.jobsLeft === 0},
		{name: `every press reached the mail server (none: ${result.undelivered.join(', ') || 'none'})`, passed: result.undelivered.length === 0},
		{name: `a press's messages carry one Message-ID and one job (${result.received} received, ${result.resent} again with the same Message-ID; mixed: ${result.mixed.join('; ') || 'none'})`, passed: result.mixed.length === 0},
		{name: `no Message-ID carries the raw key (${result.rawKeys})`, passed: result.rawKeys === 0},
	];
}

/** The row docs/benchmarks.md shows. */
export function row(result: OutboxRunResult): string {
	return `| ${result.seconds} s | ${result.presses} | ${result.succeeded} | ${result.kills.web} / ${result.kills.worker} / ${result.kills.afterHandOff} / ${result.kills.database} | ${result.jobs} | ${result.received} | ${result.resent} | ${result.undelivered.length} | ${result.mixed.length} |`;
}

export const HEADER = '| run | presses | sent | kills: web / worker / worker after a hand-off / database away | jobs | messages received | received again (same Message-ID) | presses never received | presses with two Message-IDs |\n|---|---|---|---|---|---|---|---|---|';
