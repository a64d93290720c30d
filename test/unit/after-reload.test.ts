import {IDBFactory} from 'fake-indexeddb';
import {afterEach, beforeEach, describe, expect, test, vi} from 'vitest';
import {messages} from '../../src/core/messages.js';
import type {IntentRecord} from '../../src/core/record.js';
import {createClient, indexedDbStore, type ClientOptions, type FetchLike} from '../../src/index.js';
import {drive} from './helpers.js';

/*
 * What a page finds in IndexedDB (fake-indexeddb here) after a reload: the request the intent
 * carries, as the user sent it, and why it was left unresolved. "A reload" is a new client over
 * the same database, as the next page load makes.
 */

const URL_CONTACT = 'https://api.test/contact';
const DRAFT = {name: 'Ada', email: 'ada@example.com', message: 'Hello', tags: ['a', 'b']};

beforeEach(() => {
	vi.stubGlobal('indexedDB', new IDBFactory());
});
afterEach(() => {
	vi.useRealTimers();
	vi.unstubAllGlobals();
});

/** A page: a client over sendonce's IndexedDB database, one attempt per press, no waits. */
const page = (fetch: FetchLike, options: ClientOptions = {}) => createClient({store: indexedDbStore(), fetch, retry: {limit: 1, budget: false}, ...options});

const networkDown: FetchLike = async () => {
	throw new TypeError('Failed to fetch');
};

/** A fetch that never answers, and a way to know a request reached it. */
function hanging(): {fetch: FetchLike; arrived: Promise<void>} {
	let arrive!: () => void;
	const arrived = new Promise<void>(resolve => {
		arrive = resolve;
	});
	const fetch: FetchLike = async (_input, init) => {
		arrive();
		return new Promise((_resolve, reject) => {
			init?.signal?.addEventListener('abort', () => reject(init.signal!.reason));
		});
	};

	return {fetch, arrived};
}

/** The raw record stored for `scope`. */
async function stored(scope: string): Promise<IntentRecord | undefined> {
	return indexedDbStore().get(`intent:${scope}`) as Promise<IntentRecord | undefined>;
}

describe('the request an intent shows (snapshot.request)', () => {
	test('a reload mid-send finds the URL, method and JSON body the user sent, and none of the headers that were not stored', async () => {
		const {fetch, arrived} = hanging();
		const first = page(fetch);
		const intent = await first.intent('contact', {url: URL_CONTACT, json: DRAFT, headers: {'x-csrf': 'secret', accept: 'application/json'}});
		void intent.send();
		await arrived;

		const found = await page(fetch).get('contact');

		expect(found?.state).toBe('sending');
		// The content type was stored with the body; the other headers were not.
		expect(found?.snapshot.request).toEqual({url: URL_CONTACT, method: 'POST', json: DRAFT, headers: {'content-type': 'application/json'}});
		expect(JSON.stringify(found?.snapshot.request)).not.toContain('secret');
		expect(intent.snapshot.request).toEqual(found?.snapshot.request);
	});

	test('is frozen to its leaves, and the same object from one snapshot to the next', async () => {
		const intent = await page(networkDown).intent('contact', {url: URL_CONTACT, json: DRAFT});
		const before = intent.snapshot;
		await intent.send();
		const {request} = intent.snapshot;

		expect(intent.snapshot).not.toBe(before);
		expect(request).toBe(before.request);
		expect(Object.isFrozen(request)).toBe(true);
		expect(Object.isFrozen(request.json)).toBe(true);
		expect(Object.isFrozen((request.json as typeof DRAFT).tags)).toBe(true);
	});

	test('a text body, a form and a JSON type over bytes that are not JSON are shown as the text sent', async () => {
		const client = page(networkDown);
		const text = await client.intent('text', {url: URL_CONTACT, method: 'PUT', body: 'plain words'});
		const form = await client.intent('form', {url: URL_CONTACT, body: new URLSearchParams({name: 'Ada', message: 'Hi there'})});
		const labelled = await client.intent('labelled', {url: URL_CONTACT, body: 'not json', headers: {'content-type': 'application/json'}});
		const empty = await client.intent('empty', {url: URL_CONTACT, method: 'DELETE'});

		expect(text.snapshot.request).toEqual({url: URL_CONTACT, method: 'PUT', body: 'plain words', headers: {'content-type': 'text/plain;charset=UTF-8'}});
		expect(form.snapshot.request).toEqual({url: URL_CONTACT, method: 'POST', body: 'name=Ada&message=Hi+there', headers: {'content-type': 'application/x-www-form-urlencoded;charset=UTF-8'}});
		expect(labelled.snapshot.request).toEqual({url: URL_CONTACT, method: 'POST', body: 'not json', headers: {'content-type': 'application/json'}});
		expect(empty.snapshot.request).toEqual({url: URL_CONTACT, method: 'DELETE'});
	});

	test.each(['42', 'true', '{"b":1,"a":2}', '"quoted"'])('a text/plain body that happens to parse as JSON (%s) comes back as the text typed, and is sent again as those bytes (issue 31, 5)', async typed => {
		const bodies: string[] = [];
		const fetch: FetchLike = async (_input, init) => {
			bodies.push(String(init?.body));
			throw new TypeError('Failed to fetch');
		};

		await (await page(fetch).intent('note', {url: URL_CONTACT, body: typed})).send();
		const found = await page(fetch).get('note');
		expect(found?.snapshot.request).toEqual({url: URL_CONTACT, method: 'POST', body: typed, headers: {'content-type': 'text/plain;charset=UTF-8'}});
		await page(fetch).send('note', found!.snapshot.request, {replace: true});
		expect(bodies.at(-1)).toBe(typed);
		expect(bodies.at(-1)).toBe(bodies[0]);
	});

	test('sent again as a new intent, it carries the same bytes', async () => {
		const bodies: string[] = [];
		const fetch: FetchLike = async (_input, init) => {
			bodies.push(String(init?.body));
			throw new TypeError('Failed to fetch');
		};

		const first = await page(fetch).intent('contact', {url: URL_CONTACT, json: DRAFT});
		await first.send();
		const found = await page(fetch).get('contact');
		await page(fetch).send('contact', found!.snapshot.request, {replace: true});

		expect(bodies).toHaveLength(2);
		expect(bodies[1]).toBe(bodies[0]);
	});
});

describe('why an intent is unresolved survives a reload', () => {
	const timeoutAfter = hanging().fetch;
	const cases: Array<[string, FetchLike, ClientOptions, Partial<IntentRecord>]> = [
		['the connection failed', networkDown, {}, {reason: 'exhausted', lastError: 'TypeError'}],
		['the server kept answering 503', async () => new Response('busy', {status: 503}), {}, {reason: 'exhausted', lastStatus: 503}],
		['the server did not answer in time', timeoutAfter, {timeout: 1000}, {reason: 'exhausted', lastError: 'TimeoutError'}],
		['the server refused the first attempt (left unresolved to retry after signing in)', async () => new Response('{"reason":"signed out"}', {status: 401, headers: {'content-type': 'application/json'}}), {classify: response => (response.status === 401 ? 'unresolved' : undefined)}, {reason: 'refused', lastStatus: 401}],
	];

	test.each(cases)('%s: the record keeps the cause, and the page after the reload says what the page before it said', async (_name, fetch, options, cause) => {
		vi.useFakeTimers({toFake: ['setTimeout', 'clearTimeout']});
		const before = await drive(page(fetch, options).send('contact', {url: URL_CONTACT, json: DRAFT}));
		expect(before.status).toBe('unresolved');

		const record = await stored('contact');
		expect(record).toMatchObject({state: 'unresolved', ...cause});
		// Only the cause: neither the answer's body nor the error's message is stored.
		expect(JSON.stringify(record)).not.toMatch(/busy|signed out|Failed to fetch/);

		const reloaded = page(fetch, options);
		const found = await reloaded.get('contact');
		const [listed] = await page(fetch, options).list();
		for (const result of [found?.result, found?.snapshot.result, listed?.result]) {
			// A refusal of the only attempt says nothing happened; anything else may have.
			expect(result).toMatchObject({status: 'unresolved', key: before.key, reason: cause.reason, attempts: 1, mayHaveBeenSent: cause.reason !== 'refused'});
			expect(messages.because(result)).toBe(messages.because(before));
		}

		expect(messages.because(before)).not.toBe(messages.because(undefined));
	});

	test('a record an earlier version stored, with its reason alone, is read as before: unresolved, and no stored result', async () => {
		const client = page(networkDown);
		const intent = await client.intent('contact', {url: URL_CONTACT, json: DRAFT});
		const {lastStatus: _, lastError: __, ...older} = {...(await stored('contact'))!, state: 'unresolved' as const, attempts: 2, reason: 'exhausted'};
		await indexedDbStore().set('intent:contact', older);

		const found = await page(networkDown).get('contact');

		expect(found?.key).toBe(intent.key);
		expect(found?.state).toBe('unresolved');
		// Its reason alone cannot finish the sentence (an older worker may still write such records).
		expect(found?.result).toBeUndefined();
	});

	test('the next attempt drops the stored cause, and the next outcome stores its own', async () => {
		await page(async () => new Response('busy', {status: 503})).send('contact', {url: URL_CONTACT, json: DRAFT});
		const {fetch, arrived} = hanging();
		const found = await page(fetch).get('contact');
		void found!.send();
		await arrived;

		const sending = await stored('contact');
		expect(sending).toMatchObject({state: 'sending', attempts: 2});
		expect(sending).not.toHaveProperty('reason');
		expect(sending).not.toHaveProperty('lastStatus');

		await found!.discard();
		await page(networkDown).send('contact', {url: URL_CONTACT, json: DRAFT});
		expect(await stored('contact')).toMatchObject({reason: 'exhausted', lastError: 'TypeError'});
		expect(await stored('contact')).not.toHaveProperty('lastStatus');
	});

	test('a page that holds the intent while another page leaves it unresolved reads why when it resumes', async () => {
		const {fetch, arrived} = hanging();
		const sender = page(fetch, {timeout: 1000});
		vi.useFakeTimers({toFake: ['setTimeout', 'clearTimeout']});
		const sent = sender.send('contact', {url: URL_CONTACT, json: DRAFT});
		await arrived;
		const watcher = page(networkDown);
		const held = await watcher.get('contact');
		expect(held?.result).toBeUndefined();

		const result = await drive(sent);
		expect(result).toMatchObject({status: 'unresolved', reason: 'exhausted'});
		expect(await drive(watcher.resume())).toEqual([]);

		expect(held?.state).toBe('unresolved');
		expect(held?.result).toMatchObject({status: 'unresolved', reason: 'exhausted', error: {name: 'TimeoutError'}});
		expect(messages.because(held?.result)).toBe('The server did not answer in time.');
	});
});

describe('what a hostile review of issue 22 found', () => {
	type Sent = {body: string; contentType: string | null};
	function recording(): {fetch: FetchLike; sent: Sent[]} {
		const sent: Sent[] = [];
		const fetch: FetchLike = async (_input, init) => {
			sent.push({body: String(init?.body), contentType: new Headers(init?.headers).get('content-type')});
			throw new TypeError('Failed to fetch');
		};

		return {fetch, sent};
	}

	test.each([
		['a text body labelled JSON, with a number beyond 2^53 and spaces', {body: '{"orderId": 12345678901234567891, "message": "hi"}', headers: {'content-type': 'application/json'}}],
		['json labelled application/vnd.api+json', {json: {data: {type: 'm'}}, headers: {'content-type': 'application/vnd.api+json'}}],
		['a URLSearchParams body', {body: new URLSearchParams({message: 'hi'})}],
		['json labelled text/plain', {json: {message: 'hi'}, headers: {'content-type': 'text/plain'}}],
	])('%s: sending snapshot.request again sends the same bytes, labelled the same', async (_, init) => {
		const {fetch, sent} = recording();
		await page(fetch).send('c', {url: URL_CONTACT, ...init});
		const found = await page(fetch).get('c');
		await page(fetch).send('c', found!.snapshot.request, {replace: true});

		expect(sent[1]).toEqual(sent[0]);
	});

	test('json sent under another content type is shown as the text sent, as docs/api.md says `json` is for a JSON content type (issue 31, 5)', async () => {
		await page(recording().fetch).send('c', {url: URL_CONTACT, json: {message: 'hi'}, headers: {'content-type': 'text/plain'}});

		expect((await page(networkDown).get('c'))!.snapshot.request).toEqual({url: URL_CONTACT, method: 'POST', body: '{"message":"hi"}', headers: {'content-type': 'text/plain'}});
	});

	test('a record an earlier version left unresolved (no cause kept): no stored result, and no sentence with "(undefined)"', async () => {
		await page(networkDown).intent('c', {url: URL_CONTACT, json: DRAFT});
		const {lastStatus: _, lastError: __, ...older} = {...(await stored('c'))!, state: 'unresolved' as const, attempts: 2, reason: 'refused'};
		await indexedDbStore().set('intent:c', older);
		const found = await page(networkDown).get('c');

		expect(found!.result).toBeUndefined();
		expect(messages.because(found!.result)).toBe('It was interrupted before the server could confirm it.');
		expect(messages.notConfirmed(undefined)).not.toContain('undefined');
	});

	test('a refusal on the first and only attempt (a worker leaves it unresolved): after the reload, not "may have been sent"', async () => {
		vi.useFakeTimers({toFake: ['setTimeout', 'clearTimeout']});
		const refuse: FetchLike = async () => new Response('', {status: 401});
		await page(refuse).intent('c', {url: URL_CONTACT, json: DRAFT});
		const worker = page(refuse, {classify: response => (response.status >= 400 && response.status < 500 ? 'unresolved' : undefined)});
		await drive(worker.resume());
		const found = await page(refuse).get('c');

		expect(found!.snapshot.mayHaveBeenSent).toBe(false);
		expect(found!.result).toMatchObject({status: 'unresolved', reason: 'refused', mayHaveBeenSent: false});
		expect(messages.because(found!.result)).toBe('The server refused it (401) before it could happen. Sign in again and retry.');
	});
});
