/**
 * The worker: runs the jobs `POST /api/contact` committed (contact.ts), handing each email to the
 * mail server with nodemailer. A job is marked done only after the mail server accepted the
 * message, so a worker killed in between sends it again: at least once, always with the job's
 * Message-ID, by which the receiving side tells the two apart. Run it under a supervisor (systemd,
 * a container's restart policy): it exits when it can no longer run jobs.
 *
 *   DATABASE_URL=postgres://… SMTP_PORT=2525 tsx examples/outbox/worker.ts
 */
import {resolve} from 'node:path';
import {pathToFileURL} from 'node:url';
import {makeWorkerUtils, run, type Runner, type Task} from 'graphile-worker';
import nodemailer from 'nodemailer';
import pg from 'pg';
import {SEND_EMAIL, type EmailJob} from './job.js';

export interface WorkerOptions {
	databaseUrl: string;
	smtp: {host: string; port: number};
	/** The sender of every email. @default 'Contact form <no-reply@example.com>' */
	from?: string;
	/** Jobs run at once. @default 4 */
	concurrency?: number;
	/** Called once the mail server accepted a job's message, before the job is marked done. */
	onSent?: (job: EmailJob) => void | Promise<void>;
	/** Called when the worker can no longer run jobs. @default ends the process (exit code 1) */
	onFatal?: (error: Error) => void;
}

/** Held for a worker's whole life: one worker process at a time takes jobs back and runs them. */
const WORKER_LOCK = 'sendonce outbox worker';

/**
 * Starts the worker, once no other one runs. graphile-worker leaves the jobs of a worker that died
 * locked for four hours before another may take them: holding a session lock for its whole life,
 * the worker knows that every locked job was left by one that is gone (its session, and the lock,
 * ended with it), and takes them back. A second worker started meanwhile (a rolling deploy, a
 * second replica) waits for the lock instead of taking jobs that are being sent. `onFatal` is
 * called when the worker can no longer run jobs: it lost its lock, or graphile-worker stopped one
 * of its job slots for good (it does so when it cannot mark a job done, PostgreSQL away); its
 * default ends the process, for a supervisor to start another.
 */
export async function startWorker({databaseUrl, smtp, from = 'Contact form <no-reply@example.com>', concurrency = 4, onSent, onFatal = fatal}: WorkerOptions): Promise<Runner> {
	// The lock lives as long as its session: both ends must notice a connection the network dropped
	// silently (a partition, a NAT that forgot it) within seconds, not TCP's two hours, or a worker
	// cut off keeps the lock, and the next one waits for it as long.
	const lock = new pg.Client({connectionString: databaseUrl, keepAlive: true, keepAliveInitialDelayMillis: 5000, connectionTimeoutMillis: 10_000, query_timeout: 10_000});
	lock.on('error', error => onFatal(new Error('the worker lost its lock', {cause: error})));
	await lock.connect();
	await lock.query('SET tcp_keepalives_idle = 5; SET tcp_keepalives_interval = 5; SET tcp_keepalives_count = 3');
	for (let waited = 0; !(await lock.query<{locked: boolean}>('SELECT pg_try_advisory_lock(hashtext($1)) AS locked', [WORKER_LOCK])).rows[0]!.locked; waited++) {
		if (waited % 10 === 0) console.log('worker: another worker runs; waiting for it to stop');
		await new Promise(resolve => setTimeout(resolve, 1000));
	}

	lock.once('end', () => onFatal(new Error('the worker lost its lock')));
	// And this end asks: a session that does not answer within 10 s may be gone, with the lock.
	const alive = setInterval(() => {
		lock.query('SELECT 1').catch((error: unknown) => onFatal(new Error('the worker lost its lock', {cause: error})));
	}, 10_000);

	const pool = new pg.Pool({connectionString: databaseUrl, max: concurrency + 2, connectionTimeoutMillis: 10_000});
	pool.on('error', error => console.error('worker: postgres pool', error.message));
	const utils = await makeWorkerUtils({pgPool: pool});
	await utils.migrate();
	const {rows} = await pool.query<{locked_by: string}>('SELECT DISTINCT locked_by FROM graphile_worker.jobs WHERE locked_by IS NOT NULL');
	if (rows.length > 0) await utils.forceUnlockWorkers(rows.map(row => row.locked_by));

	// One connection per message, and no retries of its own: a failed hand-off fails the job, and
	// graphile-worker runs it again later (after 2.7 s, 7.4 s, 20 s…, 25 attempts by default). A
	// hand-off given up while the mail server still takes the message is a copy: wait as long as
	// RFC 5321 lets a server take to accept a message (10 minutes).
	const transport = nodemailer.createTransport({host: smtp.host, port: smtp.port, secure: false, ignoreTLS: true, connectionTimeout: 10_000, greetingTimeout: 30_000, socketTimeout: 10 * 60_000});
	const sendEmail: Task = async (payload, helpers) => {
		const job = payload as EmailJob;
		await transport.sendMail({
			from,
			to: job.to,
			replyTo: job.replyTo,
			subject: job.subject,
			text: job.text,
			// The same in every attempt of this job: a second hand-off is a copy the receiver can drop.
			messageId: job.messageId,
			headers: {'X-Job-Id': helpers.job.id},
		});
		await onSent?.(job);
	};

	const runner = await run({pgPool: pool, concurrency, noHandleSignals: true, pollInterval: 500, parsedCronItems: [], taskList: {[SEND_EMAIL]: sendEmail}});
	// A slot graphile-worker stopped is not replaced (0.16): the process would idle with jobs waiting.
	runner.events.on('worker:fatalError', ({error}) => onFatal(error instanceof Error ? error : new Error(String(error))));
	void runner.promise.finally(async () => {
		utils.release();
		await pool.end();
		clearInterval(alive);
		lock.removeAllListeners('end');
		await lock.end();
	});
	return runner;
}

function fatal(error: Error): never {
	console.error(`worker: ${error.message}; exiting, for a supervisor to start another`);
	process.exit(1);
}

async function main(): Promise<void> {
	const databaseUrl = process.env.DATABASE_URL;
	const port = Number(process.env.SMTP_PORT);
	if (!databaseUrl) throw new TypeError('Expected `DATABASE_URL` to be a PostgreSQL URL');
	if (!Number.isInteger(port) || port <= 0) throw new TypeError(`Expected \`SMTP_PORT\` to be a port number, got ${process.env.SMTP_PORT}`);
	// Started by another process (the demo, a test): gone with it, even while it waits for the lock.
	process.once('disconnect', () => process.exit(0));
	// The demo and the chaos test ask a worker to die right after its next hand-off (`die-after-send`).
	let dieAfterSend = false;
	process.on('message', message => {
		if (message === 'die-after-send') dieAfterSend = true;
	});
	const runner = await startWorker({
		databaseUrl,
		smtp: {host: process.env.SMTP_HOST ?? '127.0.0.1', port},
		concurrency: Number(process.env.WORKER_CONCURRENCY ?? 4),
		onSent() {
			if (dieAfterSend) process.kill(process.pid, 'SIGKILL');
		},
	});
	process.send?.('ready');
	const stop = () => {
		void runner.stop().then(() => process.exit(0));
	};

	process.once('SIGINT', stop);
	process.once('SIGTERM', stop);
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
	await main().catch((error: unknown) => {
		console.error(error instanceof Error ? error.message : error);
		process.exit(1);
	});
}
