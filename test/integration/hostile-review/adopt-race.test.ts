import {IDBFactory} from 'fake-indexeddb';
import {afterEach, beforeEach, expect, test, vi} from 'vitest';
import {createClient, indexedDbStore} from '../../../src/index.js';

beforeEach(() => {
	vi.stubGlobal('indexedDB', new IDBFactory());
});
afterEach(() => {
	vi.unstubAllGlobals();
});

// The worker delivered k-1 while the tab was hidden (its note is stored). The tab comes back:
// resume() runs (visibilitychange) while the user presses Send again in that scope.
test('a press racing the page\'s resume() over the worker\'s note is sent and settles', async () => {
	const raw = indexedDbStore();
	const now = Date.now();
	await raw.set('intent:contact', {
		v: 1, key: 'k-1', scope: 'contact', state: 'succeeded', request: {url: 'https://api.example.com/contact', method: 'POST', headers: {'content-type': 'application/json'}, body: '{"m":"old"}'},
		fingerprint: 'a'.repeat(64), attempts: 1, createdAt: now, expiresAt: now + 60_000, updatedAt: now,
	});
	let calls = 0;
	const client = createClient({store: indexedDbStore(), retry: {limit: 3, baseDelay: 1, maxDelay: 5, budget: false}, fetch: async () => {
		calls++;
		return calls === 1 ? new Response('down', {status: 503}) : new Response('{}', {status: 201, headers: {'content-type': 'application/json'}});
	}});

	const resumed = client.resume();
	const pressed = client.send('contact', {url: 'https://api.example.com/contact', json: {m: 'new'}});
	await resumed;
	const outcome = (await pressed).status;
	const live = await client.get('contact');
	// The settled record's delete rides along with the next write, or goes within 250 ms.
	await expect.poll(async () => raw.list()).toEqual([]);
	await createClient({store: indexedDbStore(), fetch: async () => {
		calls++;
		return new Response('{}', {status: 201, headers: {'content-type': 'application/json'}});
	}}).resume(); // the next page load, or the service worker's next sync
	expect(outcome).toBe('succeeded');
	expect(calls).toBe(2);
	expect(live?.key).not.toBe('k-1');
	expect(await raw.list()).toEqual([]); // settled: nothing left to send again
}, 10_000);
