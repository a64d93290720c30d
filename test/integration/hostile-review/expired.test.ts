import {afterEach, expect, test, vi} from 'vitest';
import {createFetch} from '../../../src/integrations/fetch.js';
import {createClient} from '../../../src/index.js';

afterEach(() => {
	vi.useRealTimers();
});

// A press stored but never sent (tab closed before the first attempt, or client.intent() then
// the page went away) outlives its window. The user comes back and presses again, same body.
test('a new press is not swallowed by an expired, never-sent intent of the scope', async () => {
	const sent: string[] = [];
	const client = createClient({store: 'memory', window: 50, fetch: async () => {
		sent.push('x');
		return new Response('{}', {status: 201, headers: {'content-type': 'application/json'}});
	}});
	await client.intent('contact', {url: 'https://api.example.com/contact', json: {m: 'hi'}});
	vi.useFakeTimers({toFake: ['Date']});
	vi.setSystemTime(Date.now() + 100);

	const outcome = await createFetch(client)('https://api.example.com/contact', {method: 'POST', headers: {'content-type': 'application/json'}, body: JSON.stringify({m: 'hi'}), intent: 'contact'})
		.then(response => response.status, (error: unknown) => error);
	expect(outcome).toBe(201);
	expect(sent).toHaveLength(1);
});
