import {fork, type ChildProcess} from 'node:child_process';
import {randomUUID} from 'node:crypto';
import {fileURLToPath} from 'node:url';
import {afterAll, afterEach, describe, expect, inject, test, vi} from 'vitest';
import pg from 'pg';
import {idempotency} from '../../src/server.js';
import {postgresTransactional} from '../../src/server/postgres.js';
import type {AppMessage} from '../server/idempotent-app.js';
import {dropTable, openPool, storeKinds, uniqueName, type OpenStore} from './stores.js';

const APP = fileURLToPath(new URL('../server/idempotent-app.ts', import.meta.url));

/** A server process (test/server/idempotent-app.ts) and what it has said. */
interface App {
	child: ChildProcess;
	url: string;
	started: Array<string | undefined>;
}

const children: ChildProcess[] = [];
afterEach(() => {
	for (const child of children.splice(0)) child.kill('SIGKILL');
});

async function startApp(environment: Record<string, string>): Promise<App> {
	const child = fork(APP, {execArgv: ['--import', 'tsx'], env: {...process.env, ...environment}, stdio: ['ignore', 'inherit', 'inherit', 'ipc']});
	children.push(child);
	const started: Array<string | undefined> = [];
	child.on('message', (message: AppMessage) => {
		if (message.type === 'started') started.push(message.key);
	});
	const url = await new Promise<string>((resolve, reject) => {
		child.on('message', (message: AppMessage) => {
			if (message.type === 'listening') resolve(message.url);
		});
		child.once('exit', code => reject(new Error(`the server process exited before it listened (${code})`)));
	});
	return {child, url, started};
}

async function effectsOf(app: App): Promise<number> {
	return new Promise(resolve => {
		const listen = (message: AppMessage) => {
			if (message.type !== 'effects') return;
			app.child.off('message', listen);
			resolve(message.effects);
		};

		app.child.on('message', listen);
		app.child.send({type: 'effects'});
	});
}

const order = (url: string, key: string) => fetch(`${url}/orders`, {method: 'POST', headers: {'idempotency-key': key, 'content-type': 'application/json'}, body: '{"order":"o-1","total":42}'});

const engines = [
	{kind: storeKinds.find(kind => kind.name === 'redis (node-redis)')!, environment: (): Record<string, string> => ({STORE: 'redis', REDIS_URL: inject('redisUrl') ?? '', PREFIX: `sendonce-test:${uniqueName()}:`})},
	{kind: storeKinds.find(kind => kind.name === 'postgres')!, environment: (): Record<string, string> => ({STORE: 'postgres', DATABASE_URL: inject('databaseUrl') ?? '', TABLE: `sendonce_test_${uniqueName()}`})},
];

for (const {kind, environment} of engines) {
	describe.skipIf(!kind.available)(`server processes sharing ${kind.name === 'postgres' ? 'Postgres' : 'Redis'}`, () => {
		// The processes' keys and table, opened here too to clean up and to play the second server.
		const shared = environment();
		let opened: OpenStore | undefined;
		afterAll(async () => opened?.close());
		const store = async () => {
			opened ??= await kind.open({prefix: shared['PREFIX'], table: shared['TABLE']});
			return opened.store;
		};

		test('50 concurrent requests with one key over two processes: one effect, the rest 409 or the same body', async () => {
			const [first, second] = await Promise.all([startApp({...shared, WORK_MS: '300'}), startApp({...shared, WORK_MS: '300'})]);
			await store();
			const key = randomUUID();
			const answers = await Promise.all(Array.from({length: 50}, async (_, index) => {
				const response = await order(index % 2 === 0 ? first.url : second.url, key);
				return {status: response.status, body: await response.text(), replayed: response.headers.get('idempotent-replayed')};
			}));

			expect((await effectsOf(first)) + (await effectsOf(second))).toBe(1);
			expect([...first.started, ...second.started]).toEqual([key]);
			const succeeded = answers.filter(answer => answer.status === 201);
			expect(succeeded.length).toBeGreaterThanOrEqual(1);
			expect(new Set(succeeded.map(answer => answer.body)).size).toBe(1);
			expect(succeeded.filter(answer => answer.replayed !== 'true')).toHaveLength(1);
			expect(answers.filter(answer => answer.status !== 201).map(answer => answer.status)).toEqual(Array.from({length: 50 - succeeded.length}, () => 409));
		}, 30_000);

		test('a process killed mid-handler: 409 until its lease ends, then a retry runs the handler once, succeeds and reports the lost lease', async () => {
			// Long enough for the kill, the lost connection and the first retry on a loaded machine.
			const lease = 4000;
			// The second server's store is open before the crash: the first retry must land inside the lease.
			const second = await store();
			const crashing = await startApp({...shared, LEASE: String(lease), WORK_MS: '60000'});
			const key = randomUUID();
			const lost = order(crashing.url, key).catch(() => 'connection lost');
			await vi.waitFor(() => {
				expect(crashing.started).toEqual([key]);
			}, {timeout: 10_000});
			crashing.child.kill('SIGKILL');
			const killedAt = Date.now();
			expect(await lost).toBe('connection lost');

			// The second server: the same store, with the same lease.
			let runs = 0;
			const reports: string[] = [];
			const handle = idempotency({store: second, lease, onError: (_error, {phase}) => reports.push(phase)})(async () => Response.json({run: ++runs}, {status: 201}));
			const retry = () => handle(new Request('http://api.test/orders', {method: 'POST', headers: {'idempotency-key': key, 'content-type': 'application/json'}, body: '{"order":"o-1","total":42}'}));

			expect((await retry()).status).toBe(409);
			let answer = await retry();
			while (answer.status === 409) {
				await new Promise(resolve => setTimeout(resolve, 25));
				answer = await retry();
			}

			expect(answer.status).toBe(201);
			expect(Date.now() - killedAt).toBeLessThan(lease + 4000);
			expect(runs).toBe(1);
			expect((await retry()).headers.get('idempotent-replayed')).toBe('true');
			expect(runs).toBe(1);
			// The dead process may have done its work: the run that took its key over says so.
			expect(reports).toEqual(['lease-lost']);
		}, 30_000);

		test('a process killed mid-handler: a check says running until its lease ends, then released (it may have run), never closed (issue 33)', async () => {
			const lease = 1500;
			const second = await store();
			const created = Date.now();
			const crashing = await startApp({...shared, LEASE: String(lease), WORK_MS: '60000'});
			const key = randomUUID();
			const lost = order(crashing.url, key).catch(() => 'connection lost');
			await vi.waitFor(() => {
				expect(crashing.started).toEqual([key]);
			}, {timeout: 10_000});
			crashing.child.kill('SIGKILL');
			expect(await lost).toBe('connection lost');

			const handle = idempotency({store: second, lease, clockSkew: 0})(async () => Response.json({ran: true}, {status: 201}));
			const check = async () => (await handle(new Request('http://api.test/orders', {method: 'POST', headers: {'idempotency-key': key, 'idempotency-check': `created=${created}`}}))).headers.get('idempotency-status');
			const seen = [await check()];
			while (seen.at(-1) === 'running') {
				await new Promise(resolve => setTimeout(resolve, 50));
				seen.push(await check());
			}

			expect(seen[0]).toBe('running');
			expect(seen.at(-1)).toBe('released');
			expect(seen).not.toContain('closed');
		}, 30_000);
	});
}

describe.skipIf(inject('databaseUrl') === null)('a server process with postgresTransactional', () => {
	let pool: pg.Pool;
	const table = `sendonce_test_${uniqueName()}`;
	const effects = `sendonce_effects_${uniqueName()}`;
	afterAll(async () => {
		if (!pool) return;
		await dropTable(pool, table);
		await dropTable(pool, effects);
		await pool.end();
	});

	test('killed mid-handler (SIGKILL): its effect and its claim roll back together, and the retry runs at once, once', async () => {
		pool = openPool();
		await pool.query(`CREATE TABLE "${effects}" (key text NOT NULL, pid int NOT NULL)`);
		const crashing = await startApp({STORE: 'postgres-tx', DATABASE_URL: inject('databaseUrl')!, TABLE: table, EFFECTS_TABLE: effects, WORK_MS: '60000'});
		const key = randomUUID();
		const lost = order(crashing.url, key).catch(() => 'connection lost');
		// Its effect is written, uncommitted, when it says it started.
		await vi.waitFor(() => {
			expect(crashing.started).toEqual([key]);
		}, {timeout: 10_000});
		crashing.child.kill('SIGKILL');
		expect(await lost).toBe('connection lost');

		// The retry, on another server with the same table: the dead connection's transaction is gone
		// as soon as PostgreSQL sees the connection close, so the key is free at once, no lease to wait out.
		let runs = 0;
		const handle = idempotency({store: postgresTransactional(pool, {table, wait: 5000})})(async (_request, {key: claimed, tx}) => {
			runs++;
			await tx.query(`INSERT INTO "${effects}" (key, pid) VALUES ($1, $2)`, [claimed, process.pid]);
			return Response.json({run: runs}, {status: 201});
		});
		const retry = () => handle(new Request('http://api.test/orders', {method: 'POST', headers: {'idempotency-key': key, 'content-type': 'application/json'}, body: '{"order":"o-1","total":42}'}));
		const answer = await retry();

		expect(answer.status).toBe(201);
		expect(runs).toBe(1);
		expect((await retry()).headers.get('idempotent-replayed')).toBe('true');
		const {rows} = await pool.query(`SELECT pid FROM "${effects}" WHERE key = $1`, [key]);
		expect(rows).toEqual([{pid: process.pid}]);
	}, 30_000);
});
