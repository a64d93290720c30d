/**
 * The whole chain in three processes of its own, as they would be deployed: the mail server
 * (smtp-sink.ts), the worker (worker.ts) and the web process (server.ts), on 127.0.0.1 with one
 * PostgreSQL database. The demo's full mode and the chaos test (test/outbox) start it, kill its
 * processes and read what the mail server received.
 */
import {fork, type ChildProcess} from 'node:child_process';
import {mkdtemp, readFile, rm} from 'node:fs/promises';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {fileURLToPath} from 'node:url';
import pg from 'pg';
import type {ReceivedMail} from './smtp-sink.js';

const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));

export interface ChainOptions {
	databaseUrl: string;
	/** Environment for the mail server: `LOSE_REPLIES`, `DROP_CONNECTIONS`. */
	sink?: Record<string, string>;
	/** Environment for the web process: `DEMO_SLOW`, `CLOCK_SKEW`, `STATIC_ROOT`. */
	web?: Record<string, string>;
	/** Environment for the worker: `WORKER_CONCURRENCY`. */
	worker?: Record<string, string>;
	/** Where the processes' output goes. @default 'inherit' */
	output?: 'inherit' | 'ignore';
	/** Start another worker when one exits by itself (`die-after-send`, or a fatal error), as a supervisor would. @default false */
	keepWorker?: boolean;
}

export interface Chain {
	/** The web process's URL (it changes when the process is restarted). */
	readonly webUrl: string;
	/** What the mail server received, in order. */
	received(): Promise<ReceivedMail[]>;
	/** SIGKILLs the web process and starts another. */
	restartWeb(): Promise<void>;
	/** SIGKILLs the worker and starts another (which takes back the jobs the dead one held). */
	restartWorker(): Promise<void>;
	/** Sends a process a message (`'die-after-send'` to the worker; `'lose-next-reply'` or `'heal'`, no more random faults, to the mail server). */
	tell(process: 'worker' | 'sink', message: string): void;
	/** Jobs not yet done (waiting, running, or failed and waiting for another attempt). */
	jobsLeft(): Promise<number>;
	/** Deletes every stored key, as if they had expired: a retry of an old key runs again. */
	forgetKeys(): Promise<void>;
	/** Runs now the jobs that wait for another attempt (graphile-worker waits 2.7 s, 7.4 s, 20 s… between them). */
	hurry(): Promise<void>;
	close(): Promise<void>;
}

type Message = {type: 'listening'; port: number} | 'ready' | {type: 'mail'};

export async function startChain({databaseUrl, sink: sinkEnv = {}, web: webEnv = {}, worker: workerEnv = {}, output = 'inherit', keepWorker = false}: ChainOptions): Promise<Chain> {
	const folder = await mkdtemp(join(tmpdir(), 'sendonce-outbox-'));
	const mailLog = join(folder, 'mail.jsonl');
	const children = new Set<ChildProcess>();
	let closing = false;

	const startOnce = async (file: string, environment: Record<string, string>, ready: (message: Message) => number | true | undefined): Promise<{child: ChildProcess; value: number | true}> => {
		// Nothing is started once the chain closes: a process forked then would outlive it.
		if (closing) throw new Error('the chain is closed');
		const child = fork(here(file), {execArgv: ['--import', 'tsx'], env: {...process.env, DATABASE_URL: databaseUrl, ...environment}, stdio: ['ignore', output, output, 'ipc']});
		children.add(child);
		child.once('exit', () => children.delete(child));
		const value = await new Promise<number | true>((resolve, reject) => {
			child.on('message', (message: Message) => {
				const found = ready(message);
				if (found !== undefined) resolve(found);
			});
			child.once('exit', code => reject(new Error(`${file} exited (${code}) before it was ready`)));
		});
		return {child, value};
	};

	// As a supervisor would: a process that exits before it is ready (PostgreSQL away) is started
	// again, 0.5 s later, then up to 5 s later, `attempts` times (a kept worker: for as long as it takes).
	const start = async (file: string, environment: Record<string, string>, ready: (message: Message) => number | true | undefined, attempts = 60): Promise<{child: ChildProcess; value: number | true}> => {
		for (let attempt = 1; ; attempt++) {
			try {
				return await startOnce(file, environment, ready);
			} catch (error) {
				if (closing || attempt >= attempts) throw error;
				await new Promise(resolve => setTimeout(resolve, Math.min(500 * attempt, 5000)));
			}
		}
	};

	const listening = (message: Message) => (typeof message === 'object' && message.type === 'listening' ? message.port : undefined);
	const alive = (child: ChildProcess | undefined): child is ChildProcess => child !== undefined && child.exitCode === null && child.signalCode === null;
	const kill = async (child: ChildProcess) => {
		if (!alive(child)) return;
		const exited = new Promise(resolve => child.once('exit', resolve));
		child.kill('SIGKILL');
		await exited;
	};

	// What a start that failed half-way leaves: nothing.
	const abandon = async (error: unknown): Promise<never> => {
		closing = true;
		await Promise.all([...children].map(kill));
		await rm(folder, {recursive: true, force: true});
		throw error;
	};

	const sink = await start('./smtp-sink.ts', {SMTP_PORT: '0', MAIL_LOG: mailLog, ...sinkEnv}, listening).catch(abandon);
	const smtpPort = String(sink.value);
	// One worker at a time: `ensureWorker` starts one unless one runs or is starting; with
	// `keepWorker`, one that exits is started again, as a supervisor would.
	let worker: ChildProcess | undefined;
	let starting: Promise<ChildProcess> | undefined;
	const ensureWorker = async (): Promise<ChildProcess> => {
		if (alive(worker)) return worker;
		starting ??= start('./worker.ts', {SMTP_PORT: smtpPort, ...workerEnv}, message => (message === 'ready' ? true : undefined), keepWorker ? Number.POSITIVE_INFINITY : 60).then(({child}) => {
			worker = child;
			starting = undefined;
			child.once('exit', () => {
				if (keepWorker && !closing) {
					setTimeout(() => {
						if (!closing) void ensureWorker().catch((error: unknown) => console.error('could not restart the worker:', error));
					}, 300);
				}
			});
			return child;
		}, (error: unknown) => {
			starting = undefined;
			throw error;
		});
		return starting;
	};

	const startWeb = async () => {
		const {child, value} = await start('./server.ts', {PORT: '0', ...webEnv}, listening);
		return {child, url: `http://127.0.0.1:${value}`};
	};

	// The web process first: its migrations make the tables the worker reads.
	let web = await startWeb().catch(abandon);
	await ensureWorker().catch(abandon);

	const pool = new pg.Pool({connectionString: databaseUrl, max: 2});
	pool.on('error', () => undefined);
	const query = async <Row>(text: string): Promise<Row[]> => (await pool.query(text)).rows as Row[];

	return {
		get webUrl() {
			return web.url;
		},
		async received() {
			const text = await readFile(mailLog, 'utf8').catch(() => '');
			return text.split('\n').filter(Boolean).map(line => JSON.parse(line) as ReceivedMail);
		},
		async restartWeb() {
			await kill(web.child);
			web = await startWeb();
		},
		async restartWorker() {
			await starting?.catch(() => undefined);
			if (worker) await kill(worker);
			await ensureWorker();
		},
		tell(target, message) {
			const child = target === 'worker' ? worker : sink.child;
			if (alive(child) && child.connected) child.send(message);
		},
		async jobsLeft() {
			const rows = await query<{count: number}>('SELECT count(*)::int AS count FROM graphile_worker.jobs');
			return rows[0]!.count;
		},
		async hurry() {
			await query('SELECT count(*) FROM graphile_worker.reschedule_jobs(ARRAY(SELECT id FROM graphile_worker.jobs WHERE locked_at IS NULL AND attempts > 0), run_at => now())');
		},
		async forgetKeys() {
			await query('DELETE FROM sendonce_idempotency_keys');
		},
		async close() {
			closing = true;
			// A start under way forks nothing more (`startOnce`), and what it forked is among `children`.
			await Promise.all([...children].map(kill));
			await pool.end();
			await rm(folder, {recursive: true, force: true});
		},
	};
}
