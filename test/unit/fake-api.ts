import type {IntentRequest, IntentStore} from '../../src/index.js';

/** What the fake API answers, in order (the last repeats): a status, a network error, or a function. */
export type Reply = {status: number; json?: unknown; headers?: Record<string, string>} | 'network' | (() => Promise<Response>);

export const URL_CONTACT = 'https://api.test/contact';

/** A fetch stub that records each request and answers from `replies` in order (the last repeats). */
export function fakeApi(...replies: Reply[]) {
	const seen: Array<{key: string | null; body: string}> = [];
	const fetch = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
		const request = input instanceof Request ? input : new Request(input, init);
		seen.push({key: request.headers.get('idempotency-key'), body: await request.text()});
		const reply = replies[Math.min(seen.length, replies.length) - 1] ?? {status: 201};
		if (reply === 'network') throw new TypeError('Failed to fetch');
		if (typeof reply === 'function') return reply();
		const headers = {'content-type': 'application/json', ...reply.headers};
		return new Response(reply.json === undefined ? null : JSON.stringify(reply.json), {status: reply.status, headers});
	};

	return {fetch, seen, keys: () => seen.map(request => request.key)};
}

/** A reply that waits until the test lets it go. */
export function held(status = 201, json: unknown = {id: 'm-1'}) {
	let release!: () => void;
	const gate = new Promise<void>(resolve => {
		release = resolve;
	});
	const reply = async () => {
		await gate;
		return new Response(JSON.stringify(json), {status, headers: {'content-type': 'application/json'}});
	};

	return {reply, release};
}

/** The contact form's request for `message`. */
export const contact = (message: string): IntentRequest => ({url: URL_CONTACT, json: {name: 'Ada', email: 'ada@example.com', message}});

/**
 * `store`, whose reads wait until `answer()` is called: a page's first render happens before it
 * knows the scope's stored intent.
 */
export function slowStore(store: IntentStore): {store: IntentStore; answer: () => void} {
	let answer!: () => void;
	const answered = new Promise<void>(resolve => {
		answer = resolve;
	});
	return {store: {...store, async get(id) {
		await answered;
		return store.get(id);
	}}, answer};
}
