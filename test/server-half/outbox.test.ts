/**
 * docs/outbox.md's statement: the email's job added by `graphile_worker.add_job()` in the key's
 * transaction (pg and Kysely), against graphile-worker at both ends of the range the docs name
 * (0.16.0 and 0.16.x newest): one job per key however often it is sent, none for a run that
 * rolled back, and the job carries the derived Message-ID, never the raw key. The worker of that
 * version runs it once (`runOnce`).
 */
import {Kysely, PostgresDialect, sql} from 'kysely';
import pg from 'pg';
import {afterAll, beforeAll, describe, expect, inject, test} from 'vitest';
import {idempotency} from '../../src/server.js';
import {kyselyTransactional} from '../../src/server/kysely.js';
import {postgresTransactional} from '../../src/server/postgres.js';
import {freshDatabase} from '../outbox/database.js';

type GraphileWorker = typeof import('graphile-worker');
const VERSIONS: Array<[string, () => Promise<GraphileWorker>]> = [
	['0.16.0 (graphile-worker-min)', async () => import('graphile-worker-min') as unknown as Promise<GraphileWorker>],
	['newest 0.16 (graphile-worker)', async () => import('graphile-worker')],
];

const databaseUrl = inject('databaseUrl');
const BODY = JSON.stringify({name: 'Ada', email: 'ada@example.com', message: 'Hello'});

describe.skipIf(databaseUrl === null).each(VERSIONS)('the email job in the key\'s transaction, graphile-worker %s', (_, load) => {
	let database: Awaited<ReturnType<typeof freshDatabase>>;
	let pool: pg.Pool;
	let worker: GraphileWorker;
	let failNext = false;
	const job = (downstreamKey: (name: string) => string) => JSON.stringify({messageId: `<${downstreamKey('email')}@contact.example.com>`, subject: 'Message from Ada'});

	beforeAll(async () => {
		worker = await load();
		database = await freshDatabase(databaseUrl!);
		pool = new pg.Pool({connectionString: database.url});
		await worker.runMigrations({pgPool: pool});
	}, 30_000);
	afterAll(async () => {
		await pool?.end();
		await database?.drop();
	});

	const jobs = async () => (await pool.query<{payload: {messageId: string}}>('SELECT payload FROM graphile_worker._private_jobs')).rows.map(row => row.payload);
	type Handler = (request: Request) => Promise<Response>;
	const send = async (handler: Handler, key: string) => handler(new Request('http://127.0.0.1/api/contact', {method: 'POST', headers: {'idempotency-key': key, 'content-type': 'application/json'}, body: BODY}));

	const handlers: Record<string, () => Handler> = {
		pg: () => idempotency({store: postgresTransactional(pool), required: true})(async (_request, {tx, downstreamKey}) => {
			await tx.query('SELECT graphile_worker.add_job($1, $2::json)', ['send_contact_email', job(downstreamKey)]);
			if (failNext) throw new Error('the handler failed after adding the job');
			return Response.json({queued: true}, {status: 201});
		}),
		Kysely: () => {
			const db = new Kysely<Record<string, never>>({dialect: new PostgresDialect({pool})});
			return idempotency({store: kyselyTransactional(db), required: true})(async (_request, {tx, downstreamKey}) => {
				await sql`SELECT graphile_worker.add_job(${'send_contact_email'}, ${job(downstreamKey)}::json)`.execute(tx);
				if (failNext) throw new Error('the handler failed after adding the job');
				return Response.json({queued: true}, {status: 201});
			});
		},
	};

	for (const [driver, make] of Object.entries(handlers)) {
		test(`${driver}: sent three times, one job; a run that failed after adding its job left none; the job carries the derived Message-ID, and the worker runs it once`, async () => {
			await pool.query('DELETE FROM graphile_worker._private_jobs');
			const handler = make();
			const key = crypto.randomUUID();
			failNext = true;
			// The handler's error rolls the transaction back (an adapter answers it 500).
			await expect(send(handler, key)).rejects.toThrow('the handler failed after adding the job');
			expect(await jobs()).toEqual([]);
			failNext = false;
			const answers = await Promise.all([send(handler, key), send(handler, key)]);
			const third = await send(handler, key);
			expect([...answers.map(answer => answer.status), third.status].sort()).toContain(201);
			expect(third.headers.get('idempotent-replayed')).toBe('true');
			const [only, ...others] = await jobs();
			expect(others).toEqual([]);
			expect(only!.messageId).toMatch(/^<[\da-f]{64}@contact\.example\.com>$/);
			expect(only!.messageId).not.toContain(key);

			const ran: string[] = [];
			await worker.runOnce({pgPool: pool, taskList: {send_contact_email: async payload => {
				ran.push((payload as {messageId: string}).messageId);
			}}});
			expect(ran).toEqual([only!.messageId]);
			expect(await jobs()).toEqual([]);
		});
	}
});

/*
 * The example's worker (examples/outbox/worker.ts) holds a session lock for its life: a second
 * worker waits for it rather than take back jobs the first is sending, and a worker whose lock
 * session is gone stops (its `onFatal`), for its supervisor to start another.
 */
describe.skipIf(databaseUrl === null)('the outbox example\'s worker: one at a time', () => {
	test('a second worker waits for the first; the first, its lock session ended, calls onFatal; stopped, the second takes over and sends', async () => {
		const {startWorker} = await import('../../examples/outbox/worker.js');
		const {startSink} = await import('../../examples/outbox/smtp-sink.js');
		const database = await freshDatabase(databaseUrl!);
		const received: string[] = [];
		const sink = await startSink({port: 0, onMail: mail => received.push(mail.messageId ?? '')});
		const admin = new pg.Pool({connectionString: database.url, max: 2});
		try {
			let fatalA: Error | undefined;
			const a = await startWorker({databaseUrl: database.url, smtp: {host: '127.0.0.1', port: sink.port}, onFatal(error) {
				fatalA = error;
			}});
			let bStarted = false;
			const b = startWorker({databaseUrl: database.url, smtp: {host: '127.0.0.1', port: sink.port}, onFatal: () => undefined}).then(runner => {
				bStarted = true;
				return runner;
			});
			await new Promise(resolve => setTimeout(resolve, 1500));
			expect(bStarted).toBe(false);

			// A's lock session ends (a network partition PostgreSQL noticed, an administrator): A must not go on.
			await admin.query('SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = \'advisory\' AND granted');
			await expect.poll(() => fatalA?.message, {timeout: 5000}).toBe('the worker lost its lock');
			await a.stop();
			const runner = await b;
			await admin.query('SELECT graphile_worker.add_job($1, $2::json)', ['send_contact_email', JSON.stringify({messageId: '<one@example.com>', messageRow: '1', to: 'team@example.com', replyTo: 'ada@example.com', subject: 'Hi', text: 'Hello'})]);
			await expect.poll(() => received, {timeout: 10_000}).toEqual(['<one@example.com>']);
			await runner.stop();
		} finally {
			await admin.end();
			await sink.close();
			await database.drop();
		}
	}, 30_000);
});
