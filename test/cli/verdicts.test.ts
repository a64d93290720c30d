/*
 * Verdicts `sendonce check` once got wrong (issue 21), each against a small server that shows it.
 */
import {createServer} from 'node:http';
import {describe, expect, test} from 'vitest';
import {parseCommandLine} from '../../src/cli/args.js';
import {check as runProbes} from '../../src/cli/check.js';
import type {ProbeContext} from '../../src/cli/probe.js';
import {exitCode, formatSummary} from '../../src/cli/report.js';
import {idempotency, memoryKeyStore, parseKeyHeader} from '../../src/server.js';
import {lookUpThenStore} from '../server/broken/look-up-then-store.js';
import {honestOptions, honestServer, PAGE_ORIGIN, type TestServer} from '../server/honest.js';
import {closeNow, listenOnLoopback} from '../server/loopback.js';
import {serve} from '../server/orders.js';
import {ALL_PROBES, runCheck, TWO_USERS} from './run.js';

/** Serves `handle`, runs the check against it with `args`, closes it; and counts the requests. */
async function check(handle: (request: Request) => Promise<Response>, args: string[]) {
	let requests = 0;
	const served = await serve(async request => {
		requests++;
		return handle(request);
	});
	try {
		return {...await runCheck(served.url, args), requests};
	} finally {
		await served.close();
	}
}

/** The honest server, whose preflight answers `preflight` instead. */
function withPreflight(preflight: Record<string, string>, server: TestServer = honestServer()) {
	return async (request: Request) => (request.method === 'OPTIONS'
		? new Response(null, {status: 204, headers: {'access-control-allow-origin': PAGE_ORIGIN, ...preflight}})
		: server.handle(request));
}

/** The honest server, allowing credentials on every answer, with `headers` set on them too. */
function credentialedServer(headers: Record<string, string> = {}): TestServer {
	const server = honestServer();
	return {
		executions: server.executions,
		async handle(request) {
			const answer = await server.handle(request);
			const changed = new Headers(answer.headers);
			for (const [name, value] of Object.entries({'access-control-allow-credentials': 'true', ...headers})) changed.set(name, value);
			return new Response(answer.body, {status: answer.status, headers: changed});
		},
	};
}

describe('probe 7, CORS, as a browser judges it', () => {
	test('a cookie-authenticated page: Cookie is never asked of the preflight, and a correct credentialed server passes', async () => {
		const run = await check(withPreflight({'access-control-allow-credentials': 'true', 'access-control-allow-headers': 'authorization, content-type, idempotency-key', 'access-control-allow-methods': 'POST'}, credentialedServer()), ['-H', 'Cookie: session=s-1', ...ALL_PROBES]);

		expect(run.verdicts.cors, run.stdout).toBe('pass');
		expect(run.stdout).not.toMatch(/asking for [^;]*cookie/);
	});

	test('PUT with a preflight that allows only POST fails: a browser sends no PUT', async () => {
		const run = await check(withPreflight({'access-control-allow-methods': 'POST', 'access-control-allow-headers': 'authorization, content-type, idempotency-key'}), ['-X', 'PUT', ...ALL_PROBES]);

		expect(run.verdicts.cors, run.stdout).toBe('fail');
		expect(run.stdout).toMatch(/^FAIL {2}7 CORS: .*PUT is not in Allow-Methods/m);
	});

	test('PUT named in Allow-Methods passes', async () => {
		const run = await check(withPreflight({'access-control-allow-methods': 'POST, PUT', 'access-control-allow-headers': 'authorization, content-type, idempotency-key', 'access-control-expose-headers': 'idempotent-replayed, retry-after'}), ['-X', 'PUT', ...ALL_PROBES]);

		expect(run.verdicts.cors, run.stdout).toBe('pass');
	});

	test('Allow-Headers * for Authorization: a warning (the Fetch standard refuses it, browsers still send it), never a pass', async () => {
		const run = await check(withPreflight({'access-control-allow-headers': '*'}), ALL_PROBES);

		expect(run.verdicts.cors, run.stdout).toBe('warn');
		expect(run.stdout).toMatch(/^WARN {2}7 CORS: .*authorization allowed only by Allow-Headers \*, which the Fetch standard never lets cover Authorization/m);
	});

	test('a page that sends cookies, and Allow-Origin *: fails', async () => {
		const run = await check(async request => (request.method === 'OPTIONS'
			? new Response(null, {status: 204, headers: {'access-control-allow-origin': '*', 'access-control-allow-credentials': 'true', 'access-control-allow-headers': 'authorization, content-type, idempotency-key'}})
			: honestServer().handle(request)), ['-H', 'Cookie: session=s-1', ...ALL_PROBES]);

		expect(run.verdicts.cors, run.stdout).toBe('fail');
		expect(run.stdout).toMatch(/^FAIL {2}7 CORS: .*a credentialed request needs Allow-Origin https:\/\/app\.test \(not \*\)/m);
	});
});

test('a cookie-authenticated page and Expose-Headers *: the replay headers stay hidden from it, a warning', async () => {
	const run = await check(withPreflight({'access-control-allow-credentials': 'true', 'access-control-allow-headers': 'authorization, content-type, idempotency-key'}, credentialedServer({'access-control-expose-headers': '*'})), ['-H', 'Cookie: session=s-1', ...ALL_PROBES]);

	expect(run.verdicts.cors, run.stdout).toBe('warn');
	expect(run.stdout).toMatch(/^WARN {2}7 CORS: .*idempotent-replayed and retry-after hidden from the page/m);
});

describe('probes that cannot tell replays from runs say so, and use what the server marks', () => {
	test('keys per user, unmarked replays, an id made from the key: the second user\'s own run is never called a leak', async () => {
		const answers = new Map<string, {body: string; answer: string}>();
		const run = await check(async request => {
			const parsed = parseKeyHeader(request.headers.get('idempotency-key'));
			if (parsed.type !== 'key') return Response.json({title: 'Idempotency key missing'}, {status: 400});
			const key = `${request.headers.get('authorization') ?? ''} ${parsed.key}`;
			const body = await request.text();
			const stored = answers.get(key);
			if (stored) return stored.body === body ? new Response(stored.answer, {status: 201}) : Response.json({title: 'Key reused with another body'}, {status: 422});
			const answer = JSON.stringify({id: `ord_${parsed.key.slice(-8)}`, ...JSON.parse(body) as object});
			answers.set(key, {body, answer});
			return new Response(answer, {status: 201});
		}, TWO_USERS);

		expect(run.verdicts['per-user'], run.stdout).toBe('pass');
	});

	test('one body for every request, nothing marked: probe 6 cannot tell one key from two, and warns', async () => {
		const run = await check(async () => Response.json({status: 'queued'}, {status: 201}), TWO_USERS);

		expect(run.verdicts['key-format'], run.stdout).toBe('warn');
		expect(run.stdout).toMatch(/^WARN {2}6 Key raw and quoted: .*cannot tell whether the quoted key was the same key/m);
	});

	test('marks its replays, but looks the key up, works, then stores, with one body for all: concurrent duplicates warn that the evidence cannot tell, never pass', async () => {
		const server = lookUpThenStore({answer: 'queued'});
		const run = await check(server.handle, TWO_USERS);

		// Answer for answer, this looks like a correct server whose duplicates join the run in progress.
		expect(Math.max(...server.executions.values())).toBeGreaterThan(10);
		expect(run.verdicts.concurrency, run.stdout).toBe('warn');
		expect(run.stdout).toMatch(/^WARN {2}5 Concurrent duplicates: .*cannot tell duplicates joined to one run from several runs/m);
	});

	test('sendonce/server scoped per user, with one answer for everyone: keys per user pass', async () => {
		const server = honestServer();
		const run = await check(async request => {
			const answer = await server.handle(request);
			// The same body for every run: only Idempotent-Replayed tells a replay.
			return answer.status === 201 ? new Response('{"ok":true}', {status: 201, headers: answer.headers}) : answer;
		}, TWO_USERS);

		expect(run.verdicts['per-user'], run.stdout).toBe('pass');
		expect(run.code, run.stdout).toBe(0);
	});

	test('a server that ignores keys: probe 6 says it replays neither form, not that the quotes are part of the key', async () => {
		let next = 0;
		const run = await check(async () => Response.json({id: `ord_${++next}`}, {status: 201}), TWO_USERS);

		expect(run.verdicts['key-format'], run.stdout).toBe('warn');
		expect(run.stdout).toMatch(/^WARN {2}6 Key raw and quoted: .*it replays neither form/m);
		expect(run.stdout).not.toMatch(/reads the quotes as part of the key/);
	});
});

test('a server that answers 409 to everything: the run never sends more than the go-ahead said, and says where it stopped', async () => {
	const run = await check(async request => (request.method === 'OPTIONS'
		? new Response(null, {status: 204})
		: Response.json({title: 'In progress'}, {status: 409, headers: {'retry-after': '0'}})), ['--concurrency', '2', ...TWO_USERS]);

	// Each 409 is waited out a bounded number of times: the run stays well inside its count.
	expect(run.requests).toBeLessThanOrEqual(32);
});

test('a probe that would send past the run\'s count is stopped there, and says so', async () => {
	let requests = 0;
	const served = await serve(async () => {
		requests++;
		return Response.json({title: 'In progress'}, {status: 409});
	});
	try {
		const parsed = parseCommandLine(['check', served.url, '--yes', '--concurrency', '2']);
		if (parsed.type !== 'check') throw new Error('the command line did not parse');
		const greedy = {id: 'greedy', title: 'Greedy', rule: 'r', async run(context: ProbeContext) {
			for (;;) await context.send({key: context.newKey()});
		}};
		const [result] = await runProbes(parsed.options, {probes: [greedy]});

		expect(requests).toBe(32);
		expect(result).toMatchObject({verdict: 'none', undecided: 'limit', got: expect.stringContaining('stopped: the run reached its limit of 32 requests') as string});
	} finally {
		await served.close();
	}
});

describe.each([400, 401, 403, 404, 415, 422])('a route that refuses the request the flags describe with %i (issue 30)', status => {
	test.each([['behind sendonce/server', true], ['with no idempotency', false]])('%s: every probe that sent it has no verdict, none fails, the run is incomplete and names --json', async (_, keyed) => {
		const refuse = () => Response.json({title: 'refused', status}, {status, headers: {'content-type': 'application/problem+json'}});
		const server = honestServer();
		// The route's own validation (or authentication): it refuses every body, keyed or not; behind
		// sendonce/server the key is checked (and its answer stored) first.
		const handle = keyed
			? async (request: Request) => (request.method === 'OPTIONS' || !request.headers.has('idempotency-key') ? server.handle(request) : refuse())
			: async (request: Request) => (request.method === 'OPTIONS' ? server.handle(request) : refuse());
		const run = await check(handle, ALL_PROBES);

		expect(Object.values(run.verdicts), run.stdout).not.toContain('fail');
		expect(run.verdicts, run.stdout).toMatchObject({replay: 'none', 'lost-reply': 'none', mismatch: 'none', concurrency: 'none', 'key-format': 'none', cors: 'none', 'per-user': 'none'});
		expect(run.stdout).toMatch(new RegExp(`^NONE {2}2 Same key twice: .*the route refused the request the flags describe under a fresh key \\(${status} `, 'm'));
		expect(run.stdout).toMatch(/: incomplete: 7 probes without a verdict \(the route refused the request the flags describe, .*--json/);
		expect(run.code).toBe(3);
		expect(run.report.exitCode).toBe(3);
		expect(run.report.summary.none).toBe(7);
	});
});

/**
 * A hand-written idempotency layer that takes the request, but whose key, once used, is refused
 * with a 4xx (a hostile review of issue 30): a hang-up stores 499 and replays it; a hang-up leaves
 * the claim held for ever (423); a first run that failed (500) leaves its key held (422).
 */
function keyRefuser(bug: 'stores-499' | 'stuck-423' | 'failed-then-422') {
	const keys = new Map<string, {state: 'running' | 'done'; status?: number; body?: string; fingerprint: string}>();
	let next = 0;
	let failed = false;
	return createServer((request, response) => {
		let body = '';
		request.on('data', chunk => {
			body += String(chunk);
		});
		request.on('end', async () => {
			const key = request.headers['idempotency-key'] as string | undefined;
			if (key === undefined) return response.writeHead(400).end('{"error":"key required"}');
			const seen = keys.get(key);
			if (seen && seen.fingerprint !== body) return response.writeHead(422).end('{"error":"key reused with another body"}');
			if (seen?.state === 'done') return response.writeHead(seen.status!, {'idempotent-replayed': 'true'}).end(seen.body);
			if (seen) return bug === 'stores-499' ? response.writeHead(409, {'retry-after': '1'}).end() : response.writeHead(bug === 'stuck-423' ? 423 : 422).end('{"error":"key in use"}');
			keys.set(key, {state: 'running', fingerprint: body});
			if (bug === 'failed-then-422' && !failed) {
				failed = true;
				return response.writeHead(500).end('{"error":"boom"}');
			}

			await new Promise(resolve => setTimeout(resolve, 30));
			if (request.socket.destroyed) {
				if (bug === 'stores-499') keys.set(key, {state: 'done', status: 499, body: '{"error":"client closed request"}', fingerprint: body});
				return undefined;
			}

			const answer = JSON.stringify({id: `ord_${++next}`});
			keys.set(key, {state: 'done', status: 201, body: answer, fingerprint: body});
			return response.writeHead(201).end(answer);
		});
	});
}

test.each([
	['stores-499', 'lost-reply', /^FAIL {2}3 Lost reply: .*499/m],
	['stuck-423', 'lost-reply', /^FAIL {2}3 Lost reply: .*423/m],
	['failed-then-422', 'replay', /^FAIL {2}2 Same key twice: .*500 .*retried: 422/m],
] as const)('a layer that takes the request but refuses a used key (%s) fails probe %s, and is never left without a verdict as a route that refuses the request', async (bug, probe, line) => {
	const server = keyRefuser(bug);
	const url = `${await listenOnLoopback(server)}/orders`;
	try {
		const run = await runCheck(url, []);
		expect(run.verdicts[probe], run.stdout).toBe('fail');
		expect(run.stdout).toMatch(line);
		expect(Object.values(run.verdicts)).not.toContain('none');
		expect(run.code).toBe(1);
	} finally {
		await closeNow(server);
	}
});

test('a correct route whose state refuses the same body once taken (a sign-up already made, 422): no FAIL, the probes after its first take have no verdict (a hostile review of issue 30)', async () => {
	const registered = new Set<string>();
	let next = 0;
	const once = idempotency({store: memoryKeyStore(), ...honestOptions})(async request => {
		const body = await request.text();
		if (registered.has(body)) return Response.json({title: 'already registered'}, {status: 422});
		registered.add(body);
		return Response.json({id: `user_${++next}`}, {status: 201});
	});
	const run = await check(once, ALL_PROBES);

	expect(Object.values(run.verdicts), run.stdout).not.toContain('fail');
	expect(run.verdicts, run.stdout).toMatchObject({'no-key': 'pass', replay: 'pass', 'lost-reply': 'none', concurrency: 'none', 'key-format': 'none'});
	expect(run.stdout).toMatch(/^NONE {2}3 Lost reply: .*the same request under a fresh key: 422 .*the route refused the request the flags describe under a fresh key/m);
	expect(run.code).toBe(3);
});

test('a layer that runs every duplicate and marks the repeats as replays: answers naming other orders (Location) are runs, marked or not (a hostile review of issue 30)', async () => {
	let next = 0;
	const seen = new Set<string>();
	const run = await check(async request => {
		const key = request.headers.get('idempotency-key');
		if (key === null) return Response.json({title: 'key required'}, {status: 400});
		const marked = seen.has(key);
		seen.add(key);
		const id = `ord_${++next}`;
		await new Promise(resolve => setTimeout(resolve, 20));
		return Response.json({id}, {status: 201, headers: {location: `/orders/${id}`, ...(marked ? {'idempotent-replayed': 'true'} : {})}});
	}, []);

	expect(run.verdicts, run.stdout).toMatchObject({replay: 'fail', 'lost-reply': 'fail', concurrency: 'fail'});
	expect(run.stdout).toMatch(/^FAIL {2}2 Same key twice: .*marked as a replay, but it names another thing made \(Location \S+\/orders\/ord_1 ≠ \S+\/orders\/ord_2\): it ran again/m);
	expect(run.code).toBe(1);
});

test('a run that stopped at the limit with nothing failed is incomplete, exit 3, never "safe"', () => {
	const result = (verdict: 'pass' | 'warn' | 'none', undecided?: 'limit' | 'refused') => ({id: 'x', title: 'X', rule: 'r', verdict, sent: 's', got: 'g', ...(undecided ? {undecided} : {})});
	const results = [result('pass'), result('warn'), result('none', 'limit')];

	expect(exitCode(results)).toBe(3);
	expect(formatSummary(results)).toBe('1 passed, 1 warned, 0 failed, 0 skipped, 1 without a verdict: incomplete: 1 probe without a verdict (stopped at the request limit)');
	expect(formatSummary([...results, result('none', 'refused')])).toMatch(/2 probes without a verdict \(stopped at the request limit; the route refused the request the flags describe, .*--json/);
	expect(exitCode([result('pass'), result('warn')])).toBe(0);
});

describe('what fresh keys, rate limits and slow answers say (a hostile review of issue 21)', () => {
	test('a server that keeps 15 characters of a key: a fresh key gets another key\'s answer, marked, and the probe fails saying two keys met', async () => {
		const server = honestServer();
		const run = await check(async request => {
			const key = request.headers.get('idempotency-key');
			if (key === null) return server.handle(request);
			const headers = new Headers(request.headers);
			headers.set('idempotency-key', key.replaceAll('"', '').slice(0, 15));
			return server.handle(new Request(request.url, {method: request.method, headers, body: await request.text()}));
		}, TWO_USERS);

		expect(run.code, run.stdout).toBe(1);
		expect(run.stdout).toMatch(/^FAIL {2}\d Same key, another body: .*never sent before, got the answer of key .*: two keys are one key to it/m);
	});

	test('a server that marks every answer a replay: the marker is no evidence, and no probe fails on it alone', async () => {
		const server = honestServer();
		const run = await check(async request => {
			const answer = await server.handle(request);
			const headers = new Headers(answer.headers);
			if (answer.status === 201) headers.set('idempotent-replayed', 'true');
			return new Response(answer.body, {status: answer.status, headers});
		}, TWO_USERS);

		expect(run.stdout).toMatch(/^WARN {2}2 Same key twice: .*got a new answer marked Idempotent-Replayed: true: the marker is no evidence here/m);
		expect(run.verdicts['key-format'], run.stdout).not.toBe('fail');
		expect(run.verdicts['per-user'], run.stdout).not.toBe('fail');
		expect(run.code, run.stdout).toBe(0);
	});

	test('a rate limit (429) is waited out like a polite client: the honest server still passes; a burst it turns away gets no verdict', async () => {
		const server = honestServer();
		const limited = new Set<string>();
		// The first request of each key is turned away once.
		const run = await check(async request => {
			const key = request.headers.get('idempotency-key') ?? '';
			if (limited.has(key)) return server.handle(request);
			limited.add(key);
			return Response.json({title: 'Too many requests'}, {status: 429, headers: {'retry-after': '0'}});
		}, ['--concurrency', '2', ...TWO_USERS]);

		// (The dropped request of probe 3 is turned away too, so its retry runs first: a warning there is the truth.)
		expect(run.verdicts, run.stdout).toMatchObject({'no-key': 'pass', replay: 'pass', mismatch: 'pass', concurrency: 'none', 'key-format': 'pass', 'per-user': 'pass'});
		expect(run.stdout).toMatch(/^NONE {2}5 Concurrent duplicates: .*[12] of the 2 requests sent together were answered 429 \(rate limited\), before this probe could decide; to get one: raise the rate limit/m);
		expect(run.code).toBe(3);
	});

	test('an answer that trickles a byte at a time is held to --timeout as a whole, not per byte', async () => {
		const {createServer} = await import('node:http');
		const {closeNow, listenOnLoopback} = await import('../server/loopback.js');
		const trickle = createServer((_request, response) => {
			response.writeHead(201, {'content-type': 'application/json'});
			const timer = setInterval(() => response.write(' '), 50);
			response.once('close', () => clearInterval(timer));
		});
		const origin = await listenOnLoopback(trickle);
		try {
			const started = performance.now();
			const run = await runCheck(`${origin}/orders`, ['--timeout', '300', '--concurrency', '2']);

			expect(run.stdout).toMatch(/^FAIL {2}1 No key: .*no whole answer within 300 ms/m);
			// Each request is cut at 300 ms: the whole run stays within a few seconds.
			expect(performance.now() - started).toBeLessThan(15_000);
		} finally {
			await closeNow(trickle);
		}
	});

	test('--concurrency 1 is refused: one request is no duplicate', async () => {
		expect(parseCommandLine(['check', 'http://localhost:3000/orders', '--concurrency', '1'])).toEqual({type: 'error', message: 'Expected --concurrency to be at least 2 (duplicates at once), got \'1\''});
	});
});
