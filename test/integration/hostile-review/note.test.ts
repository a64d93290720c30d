import {IDBFactory} from 'fake-indexeddb';
import {afterEach, beforeEach, expect, test, vi} from 'vitest';
import {createClient, indexedDbStore} from '../../../src/index.js';

beforeEach(() => {
	vi.stubGlobal('indexedDB', new IDBFactory());
	// Safari < 15.4 (the docs' "else the record's lease" column): no Web Locks, no BroadcastChannel.
	vi.stubGlobal('BroadcastChannel', undefined);
});
afterEach(() => {
	vi.unstubAllGlobals();
});

const ok = async () => new Response('{}', {status: 201, headers: {'content-type': 'application/json'}});
const request = {url: 'https://api.example.com/contact', json: {m: 'hi'}};

test('a press that joined the worker\'s send ends once the worker delivers (its note replaces the record)', async () => {
	const raw = indexedDbStore();
	await createClient({store: indexedDbStore()}).intent('contact', request);
	const stored = await raw.get('intent:contact') as Record<string, unknown>;
	// The worker is sending it: state sending, its lease on the record, held (under the 10 s
	// cap) long past the note below, however late a loaded machine runs that timer.
	await raw.set('intent:contact', {...stored, state: 'sending', attempts: 1, lease: {owner: 'worker', until: Date.now() + 9000}});

	const sent: string[] = [];
	const page = createClient({store: indexedDbStore(), fetch: async () => {
		sent.push('page');
		return ok();
	}});
	const pressed = page.send('contact', request).then(result => result.status);
	// The worker delivers; keepDelivered writes its note: lease stripped, state succeeded.
	setTimeout(() => void raw.set('intent:contact', {...stored, state: 'succeeded', attempts: 2, updatedAt: Date.now()}), 700);

	const outcome = await Promise.race([pressed, new Promise(resolve => setTimeout(() => resolve('still running after 8 s'), 8000))]);
	expect(sent).toEqual([]);
	expect(outcome).toBe('succeeded'); // fails: 'still running after 8 s' (loops forever)
}, 12_000);
