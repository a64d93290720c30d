import {HttpResponse} from 'msw';
import {afterEach, beforeEach, expect, test, vi} from 'vitest';
import {createClient, type IntentState} from '../../src/index.js';
import {drive, FAST, status, testStore, until, URL_ORDERS, useMsw} from './helpers.js';

const {api} = useMsw();

beforeEach(() => {
	vi.useFakeTimers();
});
afterEach(() => {
	vi.useRealTimers();
});

const ORDER = {url: URL_ORDERS, json: {order: 'o-1'}} as const;

test('the record cleared in another tab mid-retry (sign-out, "Clear site data"): the page stops, shows the intent as may have been sent, and Retry sends it with the same key', async () => {
	const store = testStore();
	const page = createClient({...FAST, store});
	const other = createClient({...FAST, store});
	// The first attempt meets a 503; while the page waits to retry, the other tab clears everything.
	const seen = api(() => {
		void other.clear();
		return status(503);
	}, HttpResponse.json({id: 'o-1'}, {status: 201}));
	const intent = await page.intent('checkout', ORDER);
	const states: IntentState[] = [];
	intent.subscribe(snapshot => states.push(snapshot.state));

	// Never "Sending…" for good: unresolved, and nothing more sent behind the user's back.
	expect(await drive(intent.send())).toMatchObject({status: 'unresolved', reason: 'aborted', key: intent.key, mayHaveBeenSent: true});
	expect(states.at(-1)).toBe('unresolved');
	expect(seen).toHaveLength(1);
	expect(store.records()).toEqual([]);

	const retried = await drive(intent.send());

	expect(retried).toMatchObject({status: 'succeeded', key: intent.key, attempts: 2});
	expect(seen.map(request => [request.key, request.body])).toEqual([[intent.key, '{"order":"o-1"}'], [intent.key, '{"order":"o-1"}']]);
	expect(states.at(-1)).toBe('succeeded');
});

test('replaced in another tab mid-retry, and the new intent settled: the page never brings the old one back', async () => {
	const store = testStore();
	const page = createClient({...FAST, store});
	const other = createClient({...FAST, store});
	let replaced: Promise<unknown> | undefined;
	const seen = api(() => {
		// While the page waits to retry o-1, the user sends o-2 as a new intent in the other tab.
		replaced ??= other.send('checkout', {url: URL_ORDERS, json: {order: 'o-2'}}, {replace: true});
		return status(503);
	}, HttpResponse.json({id: 'o-2'}, {status: 201}), HttpResponse.json({id: 'o-1'}, {status: 201}));
	const intent = await page.intent('checkout', ORDER);

	const sending = intent.send();
	// Fake time stands still until the other tab has stored o-2 and sent it: a page whose retry
	// timer fired before the replacement was stored would rightly send o-1 again.
	await until(() => seen.length === 2, 'o-2 sent from the other tab');
	const result = await drive(sending);
	await drive(replaced!);
	await drive(vi.advanceTimersByTimeAsync(5000));

	expect(result).toMatchObject({status: 'unresolved', reason: 'aborted', key: intent.key});
	expect(seen.map(request => request.body)).toEqual(['{"order":"o-1"}', '{"order":"o-2"}']);
	expect(store.records()).toEqual([]);
});

test('cleared on the "may have been sent" screen: Retry sends again with the same key, and the record is written back first', async () => {
	const store = testStore();
	const page = createClient({...FAST, store});
	const other = createClient({...FAST, store});
	const seen = api(status(503), status(503), status(503), status(503), status(503), HttpResponse.json({id: 'o-1'}, {status: 201}));
	const intent = await page.intent('checkout', ORDER);
	expect(await drive(intent.send())).toMatchObject({status: 'unresolved', reason: 'exhausted', attempts: 5});
	await other.clear();
	expect(store.records()).toEqual([]);

	const retried = await drive(intent.send());

	expect(retried).toMatchObject({status: 'succeeded', key: intent.key, attempts: 6});
	expect(seen).toHaveLength(6);
	expect(new Set(seen.map(request => request.key))).toEqual(new Set([intent.key]));
	// Written back before the attempt left: the write-ahead held the key again.
	expect(store.writes.filter(write => (write.value as {key?: string}).key === intent.key).at(-1)?.value).toMatchObject({key: intent.key, state: 'sending', attempts: 6});
});
