import {http, HttpResponse} from 'msw';
import {setupServer} from 'msw/node';
import {afterAll, afterEach, beforeAll, vi} from 'vitest';
import type {IntentRecord} from '../../src/core/record.js';
import type {IntentStore, SendOnceEvent} from '../../src/index.js';

export const URL_ORDERS = 'https://api.test/orders';

// Captured before any test fakes timers: the helpers below wait for real event-loop turns
// (msw answers through promises and native callbacks), never for real time.
const realSetImmediate = globalThis.setImmediate;
const realNow = Date.now.bind(Date);

/** Lets msw and the client run for `turns` turns of the real event loop; fake time stands still. */
export async function flush(turns = 10): Promise<void> {
	for (let i = 0; i < turns; i++) {
		await new Promise<void>(resolve => {
			realSetImmediate(resolve);
		});
	}
}

/**
 * Waits, without moving fake time, until `condition` holds: at least 500 turns of the event
 * loop and 10 s of real time, so a loaded machine (hashing runs on libuv's pool) is not a failure.
 */
export async function until(condition: () => boolean, what = 'the condition'): Promise<void> {
	const started = realNow();
	for (let i = 0; i < 500 || realNow() - started < 10_000; i++) {
		if (condition()) return;
		await flush(1);
	}

	throw new Error(`Timed out waiting for ${what}`);
}

/**
 * Settles `promise` while moving fake time forward in `step` ms increments, letting msw and
 * the client run between steps. Fails the test when it takes more than `limit` ms of fake time.
 */
export async function drive<T>(promise: Promise<T>, {step = 10, limit = 600_000} = {}): Promise<T> {
	let done = false;
	const tracked = promise.finally(() => {
		done = true;
	});
	tracked.catch(() => undefined);
	for (let elapsed = 0; ; elapsed += step) {
		await flush();
		if (done) return tracked;
		if (elapsed > limit) throw new Error(`Still running after ${limit} ms of fake time`);
		await vi.advanceTimersByTimeAsync(step);
	}
}

/** One request as msw saw it. */
export interface Seen {
	method: string;
	url: string;
	key: string | null;
	headers: Record<string, string>;
	body: string;
}

type Reply = Response | (() => Response | Promise<Response>);

/**
 * Starts an msw server for the file's tests; `api(...)` installs a handler for every method
 * under https://api.test/ that records each request and answers from `replies` in order (the
 * last one repeats).
 */
export function useMsw(): {server: ReturnType<typeof setupServer>; api: (...replies: Reply[]) => Seen[]} {
	const server = setupServer();
	beforeAll(() => {
		server.listen({onUnhandledRequest: 'error'});
	});
	afterEach(() => {
		server.resetHandlers();
	});
	afterAll(() => {
		server.close();
	});

	const api = (...replies: Reply[]): Seen[] => {
		const seen: Seen[] = [];
		server.use(http.all('https://api.test/*', async ({request}) => {
			seen.push({
				method: request.method,
				url: request.url,
				key: request.headers.get('idempotency-key'),
				headers: Object.fromEntries(request.headers),
				body: await request.text(),
			});
			const reply = replies[Math.min(seen.length, replies.length) - 1] ?? new HttpResponse(null, {status: 200});
			return typeof reply === 'function' ? reply() : reply.clone();
		}));
		return seen;
	};

	return {server, api};
}

export const status = (code: number, headers: Record<string, string> = {}): Response =>
	new HttpResponse(null, {status: code, headers});

/** A reply that makes fetch reject, as a dropped connection does. Pass it uncalled. */
export const networkError = (): Response => HttpResponse.error();

/** A custom store over a Map that lets tests look inside and count writes. */
export interface TestStore extends IntentStore {
	readonly map: Map<string, unknown>;
	/** Every value passed to `set`, in order. */
	readonly writes: Array<{id: string; value: unknown}>;
	/** The stored record for `scope`, if any. */
	record(scope: string): IntentRecord | undefined;
	/** Every stored intent record. */
	records(): IntentRecord[];
}

export function testStore(): TestStore {
	const map = new Map<string, unknown>();
	const writes: Array<{id: string; value: unknown}> = [];
	const records = () => [...map.values()].filter((value): value is IntentRecord =>
		typeof value === 'object' && value !== null && 'scope' in value && 'key' in value);
	return {
		map,
		writes,
		async get(id) {
			return structuredClone(map.get(id));
		},
		async set(id, value) {
			writes.push({id, value: structuredClone(value)});
			map.set(id, structuredClone(value));
		},
		async delete(id) {
			map.delete(id);
		},
		async list() {
			return [...map].map(([id, value]) => [id, structuredClone(value)] as [string, unknown]);
		},
		record: scope => records().find(record => record.scope === scope),
		records,
	};
}

/** Collects every event; `of(type)` narrows them. */
export function eventLog(): {events: SendOnceEvent[]; onEvent: (event: SendOnceEvent) => void; of: <T extends SendOnceEvent['type']>(type: T) => Array<Extract<SendOnceEvent, {type: T}>>} {
	const events: SendOnceEvent[] = [];
	return {
		events,
		onEvent(event) {
			events.push(event);
		},
		of: <T extends SendOnceEvent['type']>(type: T) => events.filter((event): event is Extract<SendOnceEvent, {type: T}> => event.type === type),
	};
}

/** Small delays so that fake time moves little. */
export const FAST = {retry: {limit: 5, baseDelay: 10, maxDelay: 100}} as const;
