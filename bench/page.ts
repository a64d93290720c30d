/*
 * Runs inside Chromium, on the contract server's origin: bundled by `browser.ts` together
 * with sendonce (src/index.ts) and ky, and driven through `window.bench`.
 */
import ky from 'ky';
import {createClient, type ClientOptions, type IntentResult} from '../src/index.js';

type Runner = () => Promise<void>;

const DATABASE = 'sendonce';
const OBJECT_STORE = 'intents';

/** IndexedDB transactions opened in this page, by mode: how many each operation costs. */
const opened: Record<IDBTransactionMode, number> = {readonly: 0, readwrite: 0, versionchange: 0};
const transaction = IDBDatabase.prototype.transaction;
IDBDatabase.prototype.transaction = function (this: IDBDatabase, ...args: Parameters<IDBDatabase['transaction']>) {
	opened[args[1] ?? 'readonly']++;
	return transaction.apply(this, args);
} as IDBDatabase['transaction'];

/** Transactions opened while `task` ran. */
async function counted<T>(task: () => Promise<T>): Promise<{value: T; readonly: number; readwrite: number}> {
	const before = {...opened};
	const value = await task();
	return {value, readonly: opened.readonly - before.readonly, readwrite: opened.readwrite - before.readwrite};
}

let serial = 0;
const order = (kind: string) => ({item: 'book', order: `${kind}-${serial++}`, total: 42});

/** Answers 201 at once, without a network: what is left of resume() is storage and orchestration. */
const instantFetch: ClientOptions['fetch'] = async () => new Response('{"ok":true}', {status: 201, headers: {'content-type': 'application/json'}});

async function openDatabase(): Promise<IDBDatabase> {
	return new Promise((resolve, reject) => {
		const request = indexedDB.open(DATABASE);
		// As idb-keyval creates it, so that sendonce opens it after us.
		request.onupgradeneeded = () => request.result.createObjectStore(OBJECT_STORE);
		request.onsuccess = () => resolve(request.result);
		request.onerror = () => reject(request.error);
	});
}

async function done(transaction: IDBTransaction): Promise<void> {
	return new Promise((resolve, reject) => {
		transaction.oncomplete = () => resolve();
		transaction.onerror = () => reject(transaction.error);
		transaction.onabort = () => reject(transaction.error);
	});
}

async function hex(text: string): Promise<string> {
	const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
	return Array.from(new Uint8Array(digest), byte => byte.toString(16).padStart(2, '0')).join('');
}

async function timed<T>(task: () => Promise<T>): Promise<{ms: number; value: T}> {
	const begin = performance.now();
	const value = await task();
	return {ms: performance.now() - begin, value};
}

const bench = {
	/**
	 * Sequential intents with each way of sending, in alternating blocks; per-intent times
	 * in ms. sendonce's clients are opened (store probed) before the clock starts.
	 */
	async overhead({count, warmup, block, only}: {count: number; warmup: number; block: number; only?: string[]}): Promise<{times: Record<string, number[]>; transactions: {readonly: number; readwrite: number}}> {
		const url = '/orders/0';
		const indexedDbClient = createClient({store: 'indexeddb'});
		// Only the clients measured: another one in the page would hear every outcome announced.
		const sessionClient = !only || only.includes('sendonce-session') ? createClient({store: 'session'}) : indexedDbClient;
		await Promise.all([indexedDbClient.durable, sessionClient.durable]);
		const intentWith = (client: typeof indexedDbClient, kind: string): Runner => async () => {
			const intent = await client.intent(`order-${serial}`, {url, json: order(kind)});
			const result = await intent.send();
			if (result.status !== 'succeeded') throw new Error(`${kind}: ${result.status}`);
		};

		const all: Record<string, Runner> = {
			'sendonce-send-indexeddb': async () => {
				const result = await indexedDbClient.send(`order-${serial}`, {url, json: order('send')});
				if (result.status !== 'succeeded') throw new Error(`send: ${result.status}`);
			},
			'sendonce-indexeddb': intentWith(indexedDbClient, 'idb'),
			'sendonce-session': intentWith(sessionClient, 'session'),
			ky: async () => {
				await ky.post(url, {json: order('ky'), headers: {'Idempotency-Key': crypto.randomUUID()}}).json();
			},
			fetch: async () => {
				const response = await fetch(url, {
					method: 'POST',
					headers: {'content-type': 'application/json', 'idempotency-key': crypto.randomUUID()},
					body: JSON.stringify(order('fetch')),
				});
				await response.json();
			},
		};
		const runners = only ? Object.fromEntries(only.map(name => [name, all[name]!])) : all;
		const times: Record<string, number[]> = Object.fromEntries(Object.keys(runners).map(name => [name, []]));
		const run = async (name: string, runs: number, keep: boolean) => {
			for (let index = 0; index < runs; index++) {
				const begin = performance.now();
				await runners[name]!();
				if (keep) times[name]!.push(performance.now() - begin);
			}
		};

		for (const name of Object.keys(runners)) await run(name, warmup, false);
		const transactions = {readonly: 0, readwrite: 0};
		for (let finished = 0; finished < count; finished += block) {
			for (const name of Object.keys(runners)) {
				const ran = await counted(async () => run(name, Math.min(block, count - finished), true));
				if (name !== 'sendonce-send-indexeddb') continue;
				transactions.readonly += ran.readonly;
				transactions.readwrite += ran.readwrite;
			}
		}

		return {times, transactions: {readonly: transactions.readonly / count, readwrite: transactions.readwrite / count}};
	},

	/** Empties sendonce's object store and writes `count` pending intents for `/orders/<n>`, in one transaction. */
	async seed({count}: {count: number}): Promise<number> {
		const now = Date.now();
		const records = await Promise.all(Array.from({length: count}, async (_, index) => {
			const url = new URL(`/orders/${index}`, location.href).href;
			const body = JSON.stringify({item: 'book', order: `resume-${index}`, total: 42});
			return {
				v: 1,
				key: crypto.randomUUID(),
				scope: `order-${index}`,
				state: 'pending',
				request: {url, method: 'POST', headers: {'content-type': 'application/json'}, body},
				fingerprint: await hex(`POST ${url}\n${body}`),
				attempts: 0,
				createdAt: now,
				expiresAt: now + 86_400_000,
				updatedAt: now,
			};
		}));
		const db = await openDatabase();
		try {
			const transaction = db.transaction(OBJECT_STORE, 'readwrite');
			const store = transaction.objectStore(OBJECT_STORE);
			store.clear();
			for (const record of records) store.put(record, `intent:${record.scope}`);
			await done(transaction);
			return count;
		} finally {
			db.close();
		}
	},

	/**
	 * The floor under any per-intent write-ahead: `count` IndexedDB transactions one after
	 * another, each writing one small record (readwrite) or reading it back (readonly).
	 */
	async transactions({count}: {count: number}): Promise<{readwrite: number; readonly: number}> {
		const db = await openDatabase();
		try {
			const write = await timed(async () => {
				for (let index = 0; index < count; index++) {
					const transaction = db.transaction(OBJECT_STORE, 'readwrite');
					transaction.objectStore(OBJECT_STORE).put({v: 1, index}, `floor:${index}`);
					await done(transaction);
				}
			});
			const read = await timed(async () => {
				for (let index = 0; index < count; index++) {
					const transaction = db.transaction(OBJECT_STORE, 'readonly');
					transaction.objectStore(OBJECT_STORE).get(`floor:${index}`);
					await done(transaction);
				}
			});
			const transaction = db.transaction(OBJECT_STORE, 'readwrite');
			transaction.objectStore(OBJECT_STORE).clear();
			await done(transaction);
			return {readwrite: write.ms / count, readonly: read.ms / count};
		} finally {
			db.close();
		}
	},

	/** Stored records, counted by a plain read of the object store (keys and values), and how long that read took. */
	async rawRead(): Promise<{ms: number; count: number}> {
		const db = await openDatabase();
		try {
			const {ms, value} = await timed(async () => {
				const store = db.transaction(OBJECT_STORE).objectStore(OBJECT_STORE);
				const request = <T>(query: IDBRequest<T>) => new Promise<T>((resolve, reject) => {
					query.onsuccess = () => resolve(query.result);
					query.onerror = () => reject(query.error);
				});
				const [keys] = await Promise.all([request(store.getAllKeys()), request(store.getAll())]);
				return keys.length;
			});
			return {ms, count: value};
		} finally {
			db.close();
		}
	},

	/** `client.list()` on a new client whose store is already open. */
	async list(): Promise<{open: number; ms: number; count: number}> {
		const client = createClient({store: 'indexeddb'});
		const open = await timed(async () => client.durable);
		const {ms, value} = await timed(async () => client.list());
		return {open: open.ms, ms, count: value.length};
	},

	/** `client.resume()` on a new client whose store is already open; `instant` answers without a network. */
	async resume({instant}: {instant: boolean}): Promise<{ms: number; outcomes: Record<string, number>; left: number; readonly: number; readwrite: number}> {
		const client = createClient({store: 'indexeddb', ...(instant ? {fetch: instantFetch} : {})});
		await client.durable;
		const {value: {ms, value}, readonly, readwrite} = await counted(async () => timed(async () => client.resume()));
		const outcomes: Record<string, number> = {};
		for (const result of value as IntentResult[]) outcomes[result.status] = (outcomes[result.status] ?? 0) + 1;
		return {ms, outcomes, left: (await client.list()).length, readonly, readwrite};
	},

	/**
	 * Stores `count` intents and settles them, as a page that has been in use: `concurrency`
	 * `client.send()` calls at a time, each a new scope. Resolves once their records are deleted.
	 */
	async settle({count, concurrency}: {count: number; concurrency: number}): Promise<{ms: number; left: number}> {
		const client = createClient({store: 'indexeddb'});
		await client.durable;
		let next = 0;
		const worker = async () => {
			while (next < count) {
				const index = next++;
				const result = await client.send(`settled-${index}`, {url: `/orders/${index}`, json: {item: 'book', order: `settled-${index}`, total: 42}});
				if (result.status !== 'succeeded') throw new Error(`settle: ${result.status}`);
			}
		};

		const {ms} = await timed(async () => Promise.all(Array.from({length: concurrency}, worker)));
		// Settled records are deleted shortly after their outcome: wait until they are.
		for (let waited = 0; waited < 100; waited++) {
			if ((await bench.rawRead()).count === 0) break;
			await new Promise(resolve => setTimeout(resolve, 100));
		}

		return {ms, left: (await bench.rawRead()).count};
	},

	/** `count` plain POSTs with an `Idempotency-Key`, `concurrency` at a time: the network's share of a resume. */
	async posts({count, concurrency}: {count: number; concurrency: number}): Promise<number> {
		let next = 0;
		const worker = async () => {
			while (next < count) {
				const index = next++;
				const response = await fetch(`/orders/${index}`, {
					method: 'POST',
					headers: {'content-type': 'application/json', 'idempotency-key': crypto.randomUUID()},
					body: JSON.stringify({item: 'book', order: `post-${index}`, total: 42}),
				});
				await response.text();
			}
		};

		const {ms} = await timed(async () => Promise.all(Array.from({length: concurrency}, worker)));
		return ms;
	},
};

declare global {
	interface Window {
		bench: typeof bench;
	}
}

window.bench = bench;
