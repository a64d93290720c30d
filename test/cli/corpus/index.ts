/*
 * The corpus: reference servers, each with the verdicts `sendonce check` must give it.
 * docs/cli.md's table is made from this list (a test keeps the two alike).
 */
import type {AddressInfo} from 'node:net';
import type {Server} from 'node:http';
import express from 'express';
import {getSharedIdempotencyService, idempotency} from 'express-idempotency';
import pg from 'pg';
import {inject} from 'vitest';
import {postgresTransactional} from '../../../src/server/postgres.js';
import {checkMisread} from '../../server/broken/check-misread.js';
import {constantUnmarked} from '../../server/broken/constant-unmarked.js';
import {globalKeys} from '../../server/broken/global-keys.js';
import {lookUpThenStore} from '../../server/broken/look-up-then-store.js';
import {noFingerprint} from '../../server/broken/no-fingerprint.js';
import {noIdempotency} from '../../server/broken/no-idempotency.js';
import {noKeyCrash} from '../../server/broken/no-key-crash.js';
import {noReplayHeader} from '../../server/broken/no-replay-header.js';
import {quotedKeysMisread} from '../../server/broken/quoted-keys-misread.js';
import {status417} from '../../server/broken/status-417.js';
import {downstreamFailsOnce} from '../../server/broken/stored-5xx.js';
import {startStuckLock} from '../../server/broken/stuck-lock.js';
import {idempotency as sendonce, memoryKeyStore} from '../../../src/server.js';
import {honestOptions, honestServer} from '../../server/honest.js';
import {closeNow} from '../../server/loopback.js';
import {orders} from '../../server/orders.js';
import {dropTable, openPool, storeKinds, uniqueName} from '../../server-half/stores.js';
import {corsEntries} from './cors.js';
import {served, type CorpusEntry, type Started} from './entry.js';
import {startNodeIdempotency} from './node-idempotency.js';

/** `sendonce/server` on one of the test stores, keys per user, CORS for the page. */
const onStore = (kind: (typeof storeKinds)[number]): CorpusEntry => ({
	name: `sendonce/server, ${kind.name}`,
	what: 'keys required and per user, CORS for the page',
	origin: true,
	verdicts: {},
	once: true,
	available: kind.available,
	async start(origin) {
		const {store, close} = await kind.open();
		const started = await served(() => honestServer({store, cors: {origin, allowHeaders: ['Authorization']}}))(origin);
		return {...started, async close() {
			await started.close();
			await close();
		}};
	},
});

/** `sendonce/server` in transactional mode: the claim rides in the handler's PostgreSQL transaction. */
const transactional: CorpusEntry = {
	name: 'sendonce/server, postgresTransactional',
	what: 'duplicates wait for the first transaction (`wait`), then get its answer: from outside, alike to runs that each answered what was stored first',
	origin: true,
	verdicts: {concurrency: 'warn'},
	says: /^WARN {2}5 Concurrent duplicates: .*got 20 × 201; 1 different unmarked 2xx answer: no duplicate met the first in progress/m,
	once: true,
	available: inject('databaseUrl') !== null,
	async start(origin) {
		const pool = openPool();
		const table = `sendonce_test_${uniqueName()}`;
		const started = await served(() => honestServer({store: postgresTransactional(pool, {table}), cors: {origin, allowHeaders: ['Authorization']}}))(origin);
		return {...started, async close() {
			await started.close();
			await dropTable(pool, table);
			await pool.end();
		}};
	},
};

/**
 * `sendonce/server` on memory, before a route whose validation refuses a body without `sku`
 * (400), probed with the default body `{}`: every probe that needs the route to take the request
 * has no verdict, and none fails a correct server (issue 30).
 */
const validating: CorpusEntry = {
	name: 'sendonce/server, a validating route',
	what: 'refuses a body without `sku` with 400; probed with the default body, which it refuses',
	flags: ['--json', '{}'],
	origin: true,
	verdicts: {replay: 'none', 'lost-reply': 'none', mismatch: 'none', concurrency: 'none', 'key-format': 'none', cors: 'none', 'per-user': 'none', 'key-check': 'none'},
	says: /^NONE {2}2 Same key twice: .*got 400 .*the route refused the request the flags describe under a fresh key \(400 .*; to get one: give --json a body/m,
	start: served(origin => {
		const created = orders();
		const once = sendonce({store: memoryKeyStore(), ...honestOptions, cors: {origin, allowHeaders: ['Authorization']}});
		return {executions: created.executions, handle: once(async (request, {key}) => {
			const input = await request.clone().json() as {sku?: unknown};
			if (typeof input.sku !== 'string') return Response.json({title: 'sku is required', status: 400}, {status: 400, headers: {'content-type': 'application/problem+json'}});
			return created.create(request, key);
		})};
	}),
};

/** express-idempotency (npm) behind Express, with 150 ms of work per order. */
async function startExpressIdempotency(): Promise<Started> {
	const created = orders();
	const api = express();
	api.use(express.json());
	api.post('/orders', idempotency(), async (request, response) => {
		if (getSharedIdempotencyService().isHit(request)) return;
		// Work that takes long enough for the concurrent duplicates to meet it in progress.
		await new Promise(resolve => setTimeout(resolve, 150));
		const answer = await created.create(new Request('http://x/', {method: 'POST', headers: {authorization: request.get('authorization') ?? ''}, body: JSON.stringify(request.body)}), request.get('idempotency-key'));
		response.status(answer.status).json(await answer.json());
	});
	const app: Server = api.listen(0, '127.0.0.1');
	await new Promise(resolve => app.once('listening', resolve));
	return {url: `http://127.0.0.1:${(app.address() as AddressInfo).port}/orders`, executions: created.executions, close: async () => closeNow(app)};
}

// Memory is the first CORS entry: the honest server, with its CORS right.
const otherStores = storeKinds.filter(kind => kind.name !== 'memory');

export const corpus: CorpusEntry[] = [
	...corsEntries.slice(0, 1),
	...otherStores.map(kind => onStore(kind)),
	transactional,
	validating,
	{name: 'sendonce/server, one answer for all', what: 'per-user scope, every order answers `{"ok":true}`', verdicts: {}, once: true, start: served(() => {
		const server = honestServer();
		return {executions: server.executions, handle: async request => {
			const answer = await server.handle(request);
			return answer.status === 201 ? new Response('{"ok":true}', {status: 201, headers: answer.headers}) : answer;
		}};
	})},
	{name: 'sendonce/server, downstream fails once', what: 'its first order answers 503, which releases the key', verdicts: {}, once: true, says: /^PASS {2}2 Same key twice: .*got 503 .*retried: 201/m, start: served(() => downstreamFailsOnce({stored: false}))},
	{name: 'express-idempotency (npm)', what: 'as installed, behind Express', verdicts: {'key-check': 'skip', 'no-key': 'warn', replay: 'warn', 'lost-reply': 'warn', mismatch: 'warn', concurrency: 'warn', 'key-format': 'warn', 'per-user': 'fail'}, once: true, start: startExpressIdempotency},
	{name: '@node-idempotency (npm)', what: 'core and memory adapter, as its Express plugin wires them', verdicts: {'key-check': 'skip', 'no-key': 'warn', 'key-format': 'warn', 'per-user': 'fail'}, once: true, start: startNodeIdempotency},
	{name: 'no idempotency', what: 'ignores the key', verdicts: {'key-check': 'skip', 'no-key': 'warn', replay: 'fail', 'lost-reply': 'fail', mismatch: 'fail', concurrency: 'fail', 'key-format': 'warn'}, start: served(() => noIdempotency())},
	{name: 'no key: 500', what: 'fails a request without a key', verdicts: {'no-key': 'fail'}, says: /^FAIL {2}1 No key: .*got 500 .*whether it ran cannot be known/m, start: served(() => noKeyCrash())},
	{name: '5xx stored', what: 'its first order answers 503, stored as the key\'s answer', verdicts: {replay: 'fail'}, says: /^FAIL {2}2 Same key twice: .*the 5xx was stored under the key and replayed/m, start: served(() => downstreamFailsOnce({stored: true}))},
	{name: 'replays unmarked', what: 'no `Idempotent-Replayed: true`', verdicts: {replay: 'warn', 'lost-reply': 'warn'}, once: true, says: /^WARN {2}2 Same key twice: .*a replay, unmarked; fix: add Idempotent-Replayed: true/m, start: served(() => noReplayHeader())},
	{name: 'stuck lock', what: 'a cancelled request keeps its claim for 24 h', verdicts: {'key-check': 'skip', 'lost-reply': 'fail'}, says: /^FAIL {2}3 Lost reply: .*409 .*the key was still locked [\d.]+ s after the dropped request/m, start: startStuckLock},
	{name: 'no fingerprint', what: 'another body under a key gets the first body\'s answer', verdicts: {mismatch: 'fail'}, says: /^FAIL {2}4 Same key, another body: .*\(Idempotent-Replayed: true\): the first body's answer, marked as a replay: the other body's action was lost/m, start: served(() => noFingerprint())},
	{name: '417 for another body', what: 'a reused key refused with 417, not 422', verdicts: {mismatch: 'warn'}, once: true, says: /^WARN {2}4 Same key, another body: .*then 417 .*the other body under a fresh key: 201 .*refused for the key, but not with 422; fix: answer 422/m, start: served(() => status417())},
	{name: 'no claim before work', what: 'looks the key up, works, then stores: each run its own id', verdicts: {'key-check': 'skip', concurrency: 'fail'}, says: /^FAIL {2}5 Concurrent duplicates: .*it ran more than once; fix: claim the key atomically/m, start: served(() => lookUpThenStore())},
	{name: 'look-up-then-store, one body', what: 'the same race, every order `{"status":"queued"}`, replays marked', verdicts: {'key-check': 'skip', concurrency: 'warn'}, says: /^WARN {2}5 Concurrent duplicates: .*cannot tell duplicates joined to one run from several runs/m, start: served(() => lookUpThenStore({answer: 'queued'}))},
	{name: 'look-up-then-store, Location', what: 'the same, but each run names its order in `Location`', verdicts: {'key-check': 'skip', concurrency: 'fail'}, says: /^FAIL {2}5 Concurrent duplicates: .*Location http:\/\/127\.0\.0\.1:\d+\/orders\/ord_.*it ran more than once/m, start: served(() => lookUpThenStore({answer: 'located'}))},
	{name: 'quoted keys verbatim', what: '`"k"` and `k` are two keys', verdicts: {'key-format': 'warn'}, says: /^WARN {2}6 Key raw and quoted: .*raw and quoted are two keys to it/m, start: served(() => quotedKeysMisread('verbatim'))},
	{name: 'quoted keys misread', what: 'every quoted key reads as one key', verdicts: {'key-format': 'fail'}, says: /^FAIL {2}6 Key raw and quoted: .*two different quoted keys got one answer/m, start: served(() => quotedKeysMisread('outside-quotes'))},
	{name: 'checks close what ran', what: 'a check of a key that ran answers `closed`', verdicts: {'key-check': 'fail'}, says: /^FAIL {2}9 Checking a key: .*a key whose request ran was called closed/m, start: served(() => checkMisread('closed'))},
	{name: 'checks say unknown', what: 'a check of a key that ran answers `unknown`', verdicts: {'key-check': 'warn'}, says: /^WARN {2}9 Checking a key: .*did not give its answer/m, start: served(() => checkMisread('unknown'))},
	{name: 'keys not per user', what: 'one key space for every user', verdicts: {'per-user': 'fail'}, says: /^FAIL {2}8 Keys per user: .*the second user got the first user's answer, marked as a replay/m, start: served(() => globalKeys())},
	{name: 'one body, unmarked', what: 'every order `{"status":"queued"}`, replays unmarked', verdicts: {replay: 'warn', 'lost-reply': 'warn', 'key-format': 'warn', 'per-user': 'warn'}, says: /^WARN {2}8 Keys per user: .*cannot tell whether the second user's request ran/m, start: served(() => constantUnmarked())},
	...corsEntries.slice(1),
];
