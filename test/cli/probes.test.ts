import {describe, expect, test} from 'vitest';
import type {Answer} from '../../src/cli/http.js';
import type {ProbeContext, ProbeRequest} from '../../src/cli/probe.js';
import {concurrency} from '../../src/cli/probes/concurrency.js';
import {cors} from '../../src/cli/probes/cors.js';
import {keyFormat} from '../../src/cli/probes/key-format.js';
import {lostReply} from '../../src/cli/probes/lost-reply.js';
import {mismatch} from '../../src/cli/probes/mismatch.js';
import {noKey} from '../../src/cli/probes/no-key.js';
import {perUser} from '../../src/cli/probes/per-user.js';
import {replay} from '../../src/cli/probes/replay.js';

// The verdicts the test servers never reach, decided from scripted answers: no network, no waiting.

const answer = (status: number, body = '', headers: Record<string, string> = {}): Answer => ({status, body, headers, ms: 1});

/** A context whose server answers each request with `respond(request, index)`. */
function scripted(respond: (request: ProbeRequest, index: number) => Answer, options: Partial<ProbeContext> = {}): ProbeContext & {sent: ProbeRequest[]} {
	const sent: ProbeRequest[] = [];
	let keys = 0;
	return {
		sent,
		method: 'POST',
		body: '{"sku":"A1"}',
		headers: {'content-type': 'application/json'},
		users: [],
		origin: undefined,
		concurrency: 4,
		newKey: () => `k${++keys}`,
		async send(request = {}) {
			sent.push(request);
			return respond(request, sent.length - 1);
		},
		async sendTogether(request, times) {
			return Array.from({length: times}, () => {
				sent.push(request);
				return respond(request, sent.length - 1);
			});
		},
		async sendAndDrop() {
			sent.push({});
		},
		marksReplays: () => false,
		slowest: () => 1,
		wait: async () => undefined,
		...options,
	};
}

describe('the probes\' verdicts on answers the test servers never give', () => {
	test('no key: a 404 warns; a 500 fails, since the request may have run and cannot be retried', async () => {
		expect(await noKey.run(scripted(() => answer(404)))).toMatchObject({verdict: 'warn', fix: expect.stringContaining('answer 400') as string});
		expect(await noKey.run(scripted(() => answer(500)))).toMatchObject({verdict: 'fail', got: expect.stringContaining('whether it ran cannot be known') as string});
	});

	test('lost reply: a retry answered as a first request, then replayed, warns that the dropped one left no answer', async () => {
		const context = scripted((_, index) => answer(201, '{"id":1}', index === 2 ? {'idempotent-replayed': 'true'} : {}));
		expect(await lostReply.run(context)).toMatchObject({verdict: 'warn', got: expect.stringContaining('the retry ran as a first request') as string});
	});

	test('lost reply: the retry waits out 409s, then passes on the replay', async () => {
		const context = scripted((_, index) => (index < 3 ? answer(409, '', {'retry-after': '1'}) : answer(201, '{"id":1}', {'idempotent-replayed': 'true'})));
		expect(await lostReply.run(context)).toMatchObject({verdict: 'pass'});
		// The drop, two 409s, the replay, and the replay again.
		expect(context.sent).toHaveLength(5);
	});

	test.each([[400, 'warn'], [409, 'warn'], [500, 'warn'], [200, 'fail']])('mismatch: %i for another body is a %s', async (status, verdict) => {
		const context = scripted((_, index) => (index === 0 ? answer(201, '{"id":1}') : answer(status, '{"id":2}')));
		expect(await mismatch.run(context)).toMatchObject({verdict});
	});

	test('concurrency: 409 without Retry-After warns; a 500 among them warns; no 2xx at all fails', async () => {
		const first = (status: number, headers: Record<string, string> = {}) => scripted((_, index) => (index === 0 ? answer(201, '{"id":1}') : answer(status, '', headers)));
		expect(await concurrency.run(first(409))).toMatchObject({verdict: 'warn', got: expect.stringContaining('3 × 409 without a Retry-After in seconds') as string});
		expect(await concurrency.run(first(409, {'retry-after': '1'}))).toMatchObject({verdict: 'pass', got: '1 × 201, 3 × 409; 1 different unmarked 2xx answer'});
		expect(await concurrency.run(first(500))).toMatchObject({verdict: 'warn'});
		expect(await concurrency.run(scripted(() => answer(409, '', {'retry-after': '1'})))).toMatchObject({verdict: 'fail'});
	});

	test('concurrency: two unmarked 2xx alike, the rest marked, one body everywhere: it cannot tell a join from a second run, and warns (issue 21)', async () => {
		const context = scripted((_, index) => answer(201, '{"ok":true}', index < 2 ? {} : {'idempotent-replayed': 'true'}));
		expect(await concurrency.run(context)).toMatchObject({verdict: 'warn', got: expect.stringContaining('cannot tell duplicates joined to one run from several runs') as string});
	});

	test('key format: says which form the server understands', async () => {
		const isQuoted = (request: ProbeRequest) => request.key?.startsWith('"') === true;
		const rawOnly = scripted(request => (isQuoted(request) ? answer(400) : answer(201, '{"id":1}')));
		expect(await keyFormat.run(rawOnly)).toMatchObject({verdict: 'warn', got: expect.stringContaining('raw keys only') as string});
		const quotedOnly = scripted(request => (isQuoted(request) ? answer(201, '{"id":1}') : answer(400)));
		expect(await keyFormat.run(quotedOnly)).toMatchObject({verdict: 'warn', got: expect.stringContaining('sf-string keys only') as string});
		expect(await keyFormat.run(scripted(() => answer(400)))).toMatchObject({verdict: 'fail'});
	});

	describe('cors', () => {
		const origin = 'https://app.test';
		const preflight = (allowHeaders: string) => answer(204, '', {'access-control-allow-origin': origin, 'access-control-allow-headers': allowHeaders});
		const withOrigin = (respond: (request: ProbeRequest) => Answer) => scripted(respond, {origin});

		test('a preflight that does not allow Idempotency-Key fails, naming the headers to allow', async () => {
			const finding = await cors.run(withOrigin(() => preflight('content-type')));
			expect(finding).toMatchObject({verdict: 'fail', fix: expect.stringContaining('Access-Control-Allow-Headers: content-type, idempotency-key') as string});
		});

		test('a preflight that allows * passes it; replay headers not exposed warn', async () => {
			const finding = await cors.run(withOrigin(request => (request.method === 'OPTIONS' ? preflight('*') : answer(201, '', {'access-control-allow-origin': origin}))));
			expect(finding).toMatchObject({verdict: 'warn', got: expect.stringContaining('idempotent-replayed and retry-after hidden') as string});
		});

		test('an answer without Access-Control-Allow-Origin fails', async () => {
			const finding = await cors.run(withOrigin(request => (request.method === 'OPTIONS' ? preflight('content-type, idempotency-key') : answer(201))));
			expect(finding).toMatchObject({verdict: 'fail', got: expect.stringContaining('the page cannot read the answer') as string});
		});

		test('the preflight carries none of the request\'s headers and no body', async () => {
			const context = withOrigin(() => answer(500));
			await cors.run(context);
			expect(context.sent[0]).toEqual({method: 'OPTIONS', headers: {origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type, idempotency-key'}});
		});
	});

	test('same key twice: a marked replay rendered again (a timestamp) warns and names the field, never "ran twice"', async () => {
		const context = scripted((_, index) => answer(201, JSON.stringify({id: 1, meta: {at: index}}), index === 1 ? {'idempotent-replayed': 'true'} : {}));
		expect(await replay.run(context)).toMatchObject({verdict: 'warn', got: expect.stringContaining('not the first answer as it was (body at meta.at)') as string});
	});

	test('same key, another body: a refusal the other body also gets under a fresh key is its validation, a warning; taken under a fresh key, 422 passes', async () => {
		const validating = scripted((request, index) => (index === 0 ? answer(201, '{"id":1}') : request.body?.includes('sendonceCheck') ? answer(422) : answer(201, '{"id":2}')));
		expect(await mismatch.run(validating)).toMatchObject({verdict: 'warn', got: expect.stringContaining('refused without the key too (its validation)') as string});
		const keyed = scripted((request, index) => (index === 1 ? answer(422) : answer(201, `{"id":${index}}`)));
		expect(await mismatch.run(keyed)).toMatchObject({verdict: 'pass', got: expect.stringContaining('refused for the key') as string});
	});

	test('concurrency: every duplicate got the answer, marked, and none a 409: nothing met the first in progress, a warning', async () => {
		const context = scripted((_, index) => answer(201, '{"id":1}', index === 0 ? {} : {'idempotent-replayed': 'true'}));
		expect(await concurrency.run(context)).toMatchObject({verdict: 'warn', got: expect.stringContaining('no duplicate met the first in progress (no 409)') as string});
	});

	test('keys per user: a second user the server does not authorise gives no verdict, not "keys blocked"', async () => {
		const context = scripted((_, index) => (index === 0 ? answer(201, '{"id":1}') : answer(401)), {users: [{authorization: 'a'}, {authorization: 'b'}]});
		expect(await perUser.run(context)).toMatchObject({verdict: 'none', undecided: 'refused', got: expect.stringContaining('the second --as is not authorised') as string});
	});

	test('keys per user: unmarked, ids per run, and the second user\'s other body refused under the first user\'s key but taken under a fresh one: one key space, a fail', async () => {
		const users = [{authorization: 'a'}, {authorization: 'b'}];
		// One key space: a key's first answer for everyone; another body under a used key refused with 400.
		const stored = new Map<string, {body: string; answer: Answer}>();
		let next = 0;
		const context = scripted(request => {
			const body = request.body ?? '{"sku":"A1"}';
			const seen = stored.get(request.key!);
			if (seen) return seen.body === body ? seen.answer : answer(400);
			const made = answer(201, `{"id":${++next}}`);
			stored.set(request.key!, {body, answer: made});
			return made;
		}, {users});
		expect(await perUser.run(context)).toMatchObject({verdict: 'fail', got: expect.stringContaining('the second user\'s body was refused for the first user\'s key') as string});
	});

	test('keys per user: the second user refused with 409 warns (no leak, one key space)', async () => {
		const context = scripted((_, index) => (index === 0 ? answer(201, '{"id":1}') : answer(409)), {users: [{authorization: 'a'}, {authorization: 'b'}]});
		expect(await perUser.run(context)).toMatchObject({verdict: 'warn'});
		expect(context.sent.map(request => request.as)).toEqual([{authorization: 'a'}, {authorization: 'b'}]);
	});
});
