import {HttpResponse} from 'msw';
import {afterEach, beforeEach, expect, test, vi} from 'vitest';
import {createClient} from '../../src/index.js';
import {drive, FAST, testStore, URL_ORDERS, useMsw} from './helpers.js';

const {api} = useMsw();

beforeEach(() => {
	vi.useFakeTimers();
	// As Firefox with cookies blocked: the constructor throws.
	vi.stubGlobal('BroadcastChannel', class {
		constructor() {
			throw new DOMException('The operation is insecure.', 'SecurityError');
		}
	});
});
afterEach(() => {
	vi.useRealTimers();
	vi.unstubAllGlobals();
});

test('where BroadcastChannel throws SecurityError, intent(), send(), list() and a second press work, and nothing rejects unhandled', async () => {
	const seen = api(HttpResponse.json({id: 'o-1'}, {status: 201}));
	const store = testStore();
	const client = createClient({...FAST, store});

	const intent = await client.intent('checkout', {url: URL_ORDERS, json: {order: 'o-1'}});
	expect((await client.list()).map(listed => listed.key)).toEqual([intent.key]);
	// The same press twice: the second joins the first (its claim is given back, not thrown).
	const [first, second] = await drive(Promise.all([
		client.send('checkout', {url: URL_ORDERS, json: {order: 'o-1'}}),
		client.send('checkout', {url: URL_ORDERS, json: {order: 'o-1'}}),
	]));

	expect(first).toMatchObject({status: 'succeeded', key: intent.key});
	expect(second).toMatchObject({status: 'succeeded', key: intent.key});
	expect(seen.map(request => request.key)).toEqual([intent.key]);
	expect(store.records()).toEqual([]);
});
