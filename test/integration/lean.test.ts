import {afterAll, afterEach, beforeAll, describe, expect, test} from 'vitest';
import {createClient, memoryStore, type ClientOptions, type IntentStore} from '../../src/index.js';
import {Records} from '../../src/core/records.js';
import {startContractServer, type ContractServer} from '../server/contract-server.js';

/** A valid version-1 record, for a store filled by hand. */
const RECORD = {
	v: 1, state: 'sending', request: {url: 'https://api.test/orders', method: 'POST', headers: {}}, fingerprint: 'a'.repeat(64),
	attempts: 1, createdAt: 1, expiresAt: Date.now() + 60_000, updatedAt: 1,
} as const;

/*
 * Fewer store steps on the way of a send (issue 12), against a real local server: one write
 * before the first attempt with client.send(), the result before the delete, and resume() in
 * batches.
 */

let server: ContractServer;
let onArrival: (() => void | Promise<void>) | undefined;
beforeAll(async () => {
	server = await startContractServer({onArrival: async () => onArrival?.()});
});
afterAll(async () => server.close());
afterEach(() => {
	server.reset();
	onArrival = undefined;
});

const fast = {retry: {limit: 3, baseDelay: 1, maxDelay: 5, budget: false}, timeout: 2000} satisfies ClientOptions;

/**
 * A memory store that counts its write steps (a step: one `set`, `update` or `updateMany`).
 * With `latency`, each step takes a millisecond to commit, as an IndexedDB transaction does.
 */
function countingStore({latency = false} = {}) {
	const base = memoryStore();
	const steps: string[] = [];
	const store: IntentStore = {
		...base,
		async set(id, value) {
			steps.push(`set ${id}`);
			await base.set(id, value);
		},
		async update(id, updater) {
			steps.push(`update ${id}`);
			await base.update!(id, updater);
		},
		async updateMany(updates) {
			steps.push(`updateMany ${updates.length}`);
			await base.updateMany!(updates);
			if (latency) await new Promise(resolve => setTimeout(resolve, 1));
		},
	};
	return {store, steps, base};
}

describe('client.send()', () => {
	test('writes the intent once before the first attempt, already sending it', async () => {
		const {store, steps, base} = countingStore();
		const client = createClient({...fast, store});
		const seen: unknown[] = [];
		onArrival = async () => {
			seen.push({steps: steps.length, record: await base.get('intent:checkout')});
		};

		const result = await client.send('checkout', {url: `${server.url}/orders`, json: {order: 'one-write'}});

		expect(result).toMatchObject({status: 'succeeded', attempts: 1});
		expect(seen).toEqual([{steps: 1, record: expect.objectContaining({key: result.key, state: 'sending', attempts: 1})}]);
		expect(server.keys).toEqual([result.key]);
	});

	test('follows the scope table: the same body while one is stored is that intent, with its key', async () => {
		const client = createClient({...fast, store: 'memory'});
		server.faults.push({type: 'lose-reply'}, {type: 'error-before', status: 503}, {type: 'error-before', status: 503});
		const first = await client.send('checkout', {url: `${server.url}/orders`, json: {order: 'table'}});
		expect(first).toMatchObject({status: 'unresolved', reason: 'exhausted'});

		const again = await client.send('checkout', {url: `${server.url}/orders`, json: {order: 'table'}});
		expect(again).toMatchObject({status: 'succeeded', key: first.key, replayed: true});
		await expect(client.send('checkout', {url: `${server.url}/orders`, json: {order: 'other'}})).resolves.toMatchObject({status: 'succeeded'});
		expect(server.effects.get('table')).toBe(1);
	});

	test('a 4xx on its first attempt is failed, not refused', async () => {
		const client = createClient({...fast, store: 'memory'});
		expect(await client.send('checkout', {url: `${server.url}/orders`, json: {order: 'no', reject: 'sold out'}})).toMatchObject({status: 'failed', response: {status: 400}});
	});
});

describe('the settled record is deleted off the way of the result', () => {
	test('send() resolves while the delete is still held; the record goes once it is let through', async () => {
		const base = memoryStore();
		let release!: () => void;
		const released = new Promise<void>(resolve => {
			release = resolve;
		});
		const store: IntentStore = {...base, async updateMany(updates) {
			await released;
			await base.updateMany!(updates);
		}};
		const client = createClient({...fast, store});

		const result = await client.send('checkout', {url: `${server.url}/orders`, json: {order: 'quick'}});
		expect(result).toMatchObject({status: 'succeeded'});
		expect(await base.get('intent:checkout')).toMatchObject({key: result.key, state: 'sending'});

		release();
		await expect.poll(async () => base.get('intent:checkout')).toBeUndefined();
	});
});

describe('a failed intent is gone before the caller hears of it', () => {
	test('its delete is made before the result; if the store refuses it, the record is marked failed and never sent again', async () => {
		const base = memoryStore();
		let refuse = false;
		const store: IntentStore = {...base, async updateMany(updates) {
			if (refuse) throw Object.assign(new Error('disk full'), {name: 'QuotaExceededError'});
			await base.updateMany!(updates);
		}};
		const events: string[] = [];
		const client = createClient({...fast, store, onEvent: event => events.push(event.type)});
		const intent = await client.intent('checkout', {url: `${server.url}/orders`, json: {order: 'nope', reject: 'sold out'}});
		refuse = true;

		expect(await intent.send()).toMatchObject({status: 'failed'});
		expect(events).toContain('store-error');
		expect(await base.get('intent:checkout')).toMatchObject({key: intent.key, state: 'failed'});
		refuse = false;
		expect(await client.resume()).toEqual([]);
		expect(await client.list()).toEqual([]);
		const again = await client.intent('checkout', {url: `${server.url}/orders`, json: {order: 'nope', reject: 'sold out'}});
		expect(again.key).not.toBe(intent.key);
		expect(server.keys).toEqual([intent.key]);
		await expect.poll(async () => (await base.get('intent:checkout') as {key?: string} | undefined)?.key).toBe(again.key);
	});
});

describe('deletions go together', () => {
	test('settled records deleted in one tick share one step; those that come while it is written share the next', async () => {
		const {store, steps, base} = countingStore();
		let release!: () => void;
		const held = new Promise<void>(resolve => {
			release = resolve;
		});
		const slow: IntentStore = {...store, async updateMany(updates) {
			await store.updateMany!(updates);
			await held;
		}};
		const records = new Records(async () => slow, () => undefined);
		const keys = Array.from({length: 8}, (_, index) => `k-${index}`);
		for (const [index, key] of keys.entries()) await base.set(`intent:s-${index}`, {...RECORD, scope: `s-${index}`, key});
		steps.length = 0;

		const first = keys.slice(0, 5).map(async (key, index) => records.removeSoon(`s-${index}`, key));
		await expect.poll(() => steps).toEqual(['updateMany 5']);
		const second = keys.slice(5).map(async (key, index) => records.removeSoon(`s-${index + 5}`, key));
		release();
		await Promise.all([...first, ...second]);

		expect(steps).toEqual(['updateMany 5', 'updateMany 3']);
		expect(await base.list()).toEqual([]);
	});
});

describe('resume() in batches', () => {
	test('30 stored intents: marked as sending 12 at a time in one step each, at most 6 on the wire, settled ones deleted together', async () => {
		const {store, steps} = countingStore({latency: true});
		const writer = createClient({...fast, store});
		for (let index = 0; index < 30; index++) await writer.intent(`order-${index}`, {url: `${server.url}/orders`, json: {order: `batch-${index}`}});
		steps.length = 0;
		let most = 0;
		onArrival = () => {
			most = Math.max(most, server.inFlight + 1);
		};

		const results = await createClient({...fast, store}).resume();

		expect(results).toHaveLength(30);
		expect(results.every(result => result.status === 'succeeded')).toBe(true);
		expect(server.totalEffects).toBe(30);
		expect(most).toBeLessThanOrEqual(6);
		// The first three steps mark the batches; deletions (one step per group) come between.
		expect(steps.filter(step => step === 'updateMany 12' || step === 'updateMany 6').slice(0, 3)).toEqual(['updateMany 12', 'updateMany 12', 'updateMany 6']);
		expect(steps.filter(step => step.startsWith('update '))).toEqual([]);
		await expect.poll(async () => store.list()).toEqual([]);
	});
});
