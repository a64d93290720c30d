import {HttpResponse} from 'msw';
import {afterEach, beforeEach, describe, expect, test, vi} from 'vitest';
import {createClient, InvalidRequestError, type IntentRequest} from '../../src/index.js';
import {canonicalJson, MAX_BODY_BYTES, prepareRequest} from '../../src/core/serialize.js';
import {drive, FAST, status, testStore, URL_ORDERS, useMsw} from './helpers.js';

const {api} = useMsw();

/** A request as a careless caller (plain JavaScript) might pass it. */
const loose = (request: unknown) => request as IntentRequest;
const prepareOptions = {headerName: 'Idempotency-Key', persistHeaders: []};

describe('canonicalJson()', () => {
	test('sorts object keys so that equal values give equal bytes', () => {
		expect(canonicalJson({b: 2, a: 1})).toBe('{"a":1,"b":2}');
		expect(canonicalJson({a: 1, b: 2})).toBe(canonicalJson({b: 2, a: 1}));
		expect(canonicalJson({z: {y: 1, x: [{b: 1, a: 2}]}, a: null})).toBe('{"a":null,"z":{"x":[{"a":2,"b":1}],"y":1}}');
	});

	test('keeps array order', () => {
		expect(canonicalJson([3, 1, 2])).toBe('[3,1,2]');
	});

	test('writes what JSON.stringify writes for plain data', () => {
		const value = {text: 'héllo "quoted" \n\u2028', n: -1.5e-7, ok: true, none: null, list: [1, 'two', false]};
		expect(JSON.parse(canonicalJson(value))).toEqual(value);
	});

	test('writes the holes of a sparse array as null, like JSON.stringify', () => {
		// eslint-disable-next-line no-sparse-arrays
		const sparse = [, 1, , 2];
		expect(canonicalJson(sparse)).toBe('[null,1,null,2]');
		expect(canonicalJson(sparse)).toBe(JSON.stringify(sparse));
		expect(canonicalJson({items: new Array(2)})).toBe('{"items":[null,null]}');
	});

	test('drops undefined members and writes undefined array items as null, like JSON.stringify', () => {
		expect(canonicalJson({a: undefined, b: 1})).toBe('{"b":1}');
		expect(canonicalJson([undefined, 1])).toBe('[null,1]');
	});

	test('uses toJSON, as JSON.stringify does', () => {
		expect(canonicalJson({at: new Date('2026-01-02T03:04:05.000Z')})).toBe('{"at":"2026-01-02T03:04:05.000Z"}');
	});

	test('an object whose toJSON returns itself is written as JSON.stringify writes it, sorted', () => {
		const value = {b: 1, a: 2, toJSON() {
			return this;
		}};
		expect(canonicalJson(value)).toBe('{"a":2,"b":1}');
	});

	test('accepts objects without a prototype', () => {
		const bare = Object.assign(Object.create(null) as object, {b: 1, a: 2});
		expect(canonicalJson(bare)).toBe('{"a":2,"b":1}');
	});

	test('allows the same object twice when it is not a cycle', () => {
		const shared = {x: 1};
		expect(canonicalJson({a: shared, b: shared})).toBe('{"a":{"x":1},"b":{"x":1}}');
	});

	test.each<[string, unknown, RegExp]>([
		['BigInt', {amount: 10n}, /`json\.amount` is a bigint/],
		['NaN', {total: Number.NaN}, /`json\.total` is NaN/],
		['Infinity', [1, Number.POSITIVE_INFINITY], /`json\[1\]` is Infinity/],
		['a function', {callback() {}}, /`json\.callback` is a function/],
		['a symbol', {tag: Symbol('x')}, /`json\.tag` is a symbol/],
		['a Map', {items: new Map([['a', 1]])}, /`json\.items` is a Map/],
		['a class instance', {when: new (class Moment {})()}, /`json\.when` is a Moment/],
	])('refuses %s, naming where it is', (_what, value, message) => {
		expect(() => canonicalJson(value)).toThrow(InvalidRequestError);
		expect(() => canonicalJson(value)).toThrow(message);
	});

	test('refuses a cycle', () => {
		const order: Record<string, unknown> = {id: 1};
		order.self = order;
		expect(() => canonicalJson(order)).toThrow(InvalidRequestError);
		expect(() => canonicalJson(order)).toThrow(/`json\.self` refers back to itself/);
	});
});

describe('prepareRequest()', () => {
	test('serialises json once, with its content type', async () => {
		const prepared = await prepareRequest({url: URL_ORDERS, json: {b: 2, a: 1}}, prepareOptions);
		expect(prepared).toMatchObject({url: URL_ORDERS, method: 'POST', body: '{"a":1,"b":2}', headers: {'content-type': 'application/json'}});
		expect(prepared.fingerprint).toMatch(/^[\da-f]{64}$/);
	});

	test('keeps a string body as it is, as text', async () => {
		const prepared = await prepareRequest({url: URL_ORDERS, body: 'plain words'}, prepareOptions);
		expect(prepared).toMatchObject({body: 'plain words', headers: {'content-type': 'text/plain;charset=UTF-8'}});
	});

	test('encodes URLSearchParams as a form', async () => {
		const prepared = await prepareRequest({url: URL_ORDERS, body: new URLSearchParams({name: 'Ada Lovelace', n: '1'})}, prepareOptions);
		expect(prepared).toMatchObject({body: 'name=Ada+Lovelace&n=1', headers: {'content-type': 'application/x-www-form-urlencoded;charset=UTF-8'}});
	});

	test('sends no body when neither json nor body is given', async () => {
		const prepared = await prepareRequest({url: URL_ORDERS, method: 'DELETE'}, prepareOptions);
		expect(prepared.body).toBeUndefined();
		expect(prepared.headers).toEqual({});
	});

	test('accepts the methods in any case and writes them in upper case', async () => {
		for (const method of ['post', 'Put', 'PATCH', 'delete']) {
			const prepared = await prepareRequest(loose({url: URL_ORDERS, method}), prepareOptions);
			expect(prepared.method).toBe(method.toUpperCase());
		}
	});

	test('the same form values give the same fingerprint, other values another', async () => {
		const a = await prepareRequest({url: URL_ORDERS, json: {a: 1, b: 2}}, prepareOptions);
		const b = await prepareRequest({url: URL_ORDERS, json: {b: 2, a: 1}}, prepareOptions);
		const c = await prepareRequest({url: URL_ORDERS, json: {a: 1, b: 3}}, prepareOptions);
		const d = await prepareRequest({url: URL_ORDERS, method: 'PUT', json: {a: 1, b: 2}}, prepareOptions);
		const e = await prepareRequest({url: `${URL_ORDERS}/2`, json: {a: 1, b: 2}}, prepareOptions);
		expect(a.fingerprint).toBe(b.fingerprint);
		expect(new Set([a.fingerprint, c.fingerprint, d.fingerprint, e.fingerprint]).size).toBe(4);
	});

	test('keeps only content-type, accept and persistHeaders for storage; the rest stay in the page', async () => {
		const prepared = await prepareRequest({
			url: URL_ORDERS,
			json: {},
			headers: {Accept: 'application/json', 'X-Tenant': 't1', Authorization: 'Bearer s3cret', 'X-Api-Key': 'k3y'},
		}, {headerName: 'Idempotency-Key', persistHeaders: ['x-tenant']});
		expect(prepared.headers).toEqual({'content-type': 'application/json', accept: 'application/json', 'x-tenant': 't1'});
		expect(prepared.session.headers).toEqual({authorization: 'Bearer s3cret', 'x-api-key': 'k3y'});
	});
});

describe('input that cannot be an intent', () => {
	beforeEach(() => {
		vi.useFakeTimers();
	});
	afterEach(() => {
		vi.useRealTimers();
	});

	const big = 'x'.repeat(MAX_BODY_BYTES + 1);
	const cycle: Record<string, unknown> = {};
	cycle.again = cycle;

	test.each<[string, unknown, RegExp]>([
		['GET', {url: URL_ORDERS, method: 'GET'}, /`method` GET/],
		['HEAD', {url: URL_ORDERS, method: 'HEAD'}, /`method` HEAD/],
		['get in lower case', {url: URL_ORDERS, method: 'get'}, /`method`/],
		['OPTIONS', {url: URL_ORDERS, method: 'OPTIONS'}, /`method`/],
		['a FormData body', {url: URL_ORDERS, body: new FormData()}, /`body` is a FormData/],
		['a Blob body', {url: URL_ORDERS, body: new Blob(['x'])}, /`body` is a Blob/],
		['a stream body', {url: URL_ORDERS, body: new ReadableStream()}, /`body` is a ReadableStream/],
		['an ArrayBuffer body', {url: URL_ORDERS, body: new ArrayBuffer(4)}, /`body`/],
		['an unparseable URL', {url: 'https://exa mple.test/orders', json: {}}, /`url`/],
		['a relative URL with no page location', {url: '/orders', json: {}}, /`url`/],
		['an empty URL', {url: '', json: {}}, /`url`/],
		['a missing URL', {json: {}}, /`url`/],
		['a BigInt in json', {url: URL_ORDERS, json: {amount: 10n}}, /`json\.amount`/],
		['NaN in json', {url: URL_ORDERS, json: {total: Number.NaN}}, /`json\.total`/],
		['a cycle in json', {url: URL_ORDERS, json: cycle}, /`json\.again` refers back to itself/],
		['both json and body', {url: URL_ORDERS, json: {a: 1}, body: 'a=1'}, /`json` or `body`/],
		['an oversized body', {url: URL_ORDERS, body: big}, /`body` is larger than/],
		['an oversized json', {url: URL_ORDERS, json: {text: big}}, /`body` is larger than/],
		['a header that is not a string', {url: URL_ORDERS, json: {}, headers: {'x-count': 1}}, /`headers\.x-count`/],
		['its own idempotency key', {url: URL_ORDERS, json: {}, headers: {'idempotency-key': 'mine'}}, /`headers\.idempotency-key`/],
		['no request at all', undefined, /request/],
		['an ftp: URL', {url: 'ftp://files.test/orders', json: {}}, /`url` "ftp:.*" uses ftp:/],
		['a data: URL', {url: 'data:text/plain,hi', json: {}}, /uses data:/],
		['a javascript: URL', {url: 'javascript:alert(1)', json: {}}, /uses javascript:/],
		['a URL with a user name and password', {url: 'https://ada:s3cret@api.test/orders', json: {}}, /user name or password/],
		['a URL with a user name', {url: 'https://ada@api.test/orders', json: {}}, /user name or password/],
		['a header name fetch cannot build', {url: URL_ORDERS, json: {}, headers: {'x bad': '1'}}, /header name "x bad"/],
		['a header value with a line break', {url: URL_ORDERS, json: {}, headers: {'x-note': 'a\r\nSet-Cookie: b'}}, /`headers\.x-note` holds a line break/],
		['a header value above U+00FF', {url: URL_ORDERS, json: {}, headers: {'x-name': 'Zoë ☃'}}, /`headers\.x-name`/],
		['a typo for json', {url: URL_ORDERS, jsn: {message: 'hi'}}, /Unknown request field `jsn`/],
		['a typo for headers', {url: URL_ORDERS, json: {}, header: {accept: 'x'}}, /Unknown request field `header`/],
		['a header pair that is not a pair', {url: URL_ORDERS, json: {}, headers: [['accept']]}, /\[name, value\] pair/],
	])('refuses %s with InvalidRequestError, before anything is stored or sent', async (_what, request, message) => {
		const seen = api(status(200));
		const store = testStore();
		const client = createClient({...FAST, store});

		const creating = client.intent('order', loose(request));
		await expect(creating).rejects.toThrow(InvalidRequestError);
		await expect(creating).rejects.toThrow(message);
		await expect(creating).rejects.toMatchObject({code: 'INVALID_REQUEST', name: 'InvalidRequestError'});
		expect(store.writes).toEqual([]);
		expect(await client.list()).toEqual([]);
		expect(seen).toEqual([]);
	});

	test('accepts a Headers instance and [name, value] pairs, as fetch does', async () => {
		const seen = api(HttpResponse.json({ok: true}));
		const store = testStore();
		const client = createClient({...FAST, store});
		const fromHeaders = await client.intent('a', {url: URL_ORDERS, json: {}, headers: new Headers({accept: 'application/json', 'x-trace': 't-1'})});
		const fromPairs = await client.intent('b', {url: URL_ORDERS, json: {}, headers: [['Accept', 'text/plain'], ['X-Trace', 't-2']]});

		expect(store.record('a')?.request.headers).toEqual({'content-type': 'application/json', accept: 'application/json'});
		expect(store.record('b')?.request.headers).toEqual({'content-type': 'application/json', accept: 'text/plain'});
		await drive(fromHeaders.send());
		await drive(fromPairs.send());
		expect(seen.map(request => [request.headers.accept, request.headers['x-trace']])).toEqual([['application/json', 't-1'], ['text/plain', 't-2']]);
	});

	test('refuses a scope that is not a non-empty string', async () => {
		const store = testStore();
		const client = createClient({store});
		for (const scope of ['', 42, 'x'.repeat(201)]) {
			await expect(client.intent(scope as string, {url: URL_ORDERS, json: {}})).rejects.toThrow(InvalidRequestError);
		}

		await expect(client.intent('', {url: URL_ORDERS, json: {}})).rejects.toThrow(/`scope`/);
		expect(store.writes).toEqual([]);
	});

	test('a body of exactly the limit is accepted', async () => {
		const exact = 'é'.repeat(MAX_BODY_BYTES / 2);
		const seen = api(HttpResponse.json({ok: true}));
		const client = createClient({...FAST, store: testStore()});
		const intent = await client.intent('order', {url: URL_ORDERS, body: exact});
		await drive(intent.send());
		expect(seen[0]!.body).toBe(exact);
	});

	test('the limit counts UTF-8 bytes, not characters', async () => {
		const client = createClient({store: testStore()});
		await expect(client.intent('order', {url: URL_ORDERS, body: 'é'.repeat((MAX_BODY_BYTES / 2) + 1)})).rejects.toThrow(InvalidRequestError);
	});
});
