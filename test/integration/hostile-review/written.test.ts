import {IDBFactory} from 'fake-indexeddb';
import {afterEach, beforeEach, expect, test, vi} from 'vitest';
import {indexedDbStore} from '../../../src/index.js';
import {keepDelivered} from '../../../src/sw/delivered.js';

beforeEach(() => {
	vi.stubGlobal('indexedDB', new IDBFactory());
});
afterEach(() => {
	vi.unstubAllGlobals();
});

// The worker delivered k-1, but a page that was waiting on it heard the outcome and deleted the
// record first: the worker's own deletion finds nothing, so no note is written.
test('a delivery whose record a page already deleted does not hold every later send() for 5 s', async () => {
	const raw = indexedDbStore();
	const {store, delivered, written} = keepDelivered(raw);
	delivered('k-1', 'contact');
	await store.updateMany!([['intent:contact', old => ((old as {key?: string} | undefined)?.key === 'k-1' ? undefined : old)]]);

	const started = Date.now();
	await written(); // the next sync's send()
	expect(Date.now() - started).toBeLessThan(1000);
}, 10_000);
