import {fileURLToPath} from 'node:url';
import {build} from 'esbuild';
import type {BrowserContext, Page} from 'playwright-core';
import {afterAll, afterEach, beforeAll, beforeEach, describe, expect, inject, test} from 'vitest';
import type {IntentState, SendOnceClient} from '../../src/index.js';
import {startContractServer, type ContractServer, type SeenRequest} from '../server/contract-server.js';
import {bundleForBrowser} from './global-setup.js';
import {fireSync, launchBrowser} from './harness.js';

declare global {
	interface Window {
		/** This page's client, opted in to Background Sync. */
		client: SendOnceClient;
	}
}

const ORDER = {url: '/orders', json: {order: 'o-1', total: 42}} as const;
const RETRY = {limit: 30, baseDelay: 100, maxDelay: 400} as const;
/** A page's retries that come only after the page has closed: no request of the page races the worker's. */
const SLOW_RETRY = {limit: 30, baseDelay: 10_000, maxDelay: 10_000} as const;
/** How long to wait for a condition: the worker may have to start first, retries back off. */
const PATIENT = {timeout: 10_000};

/** A page of the site that does not load sendonce. */
const PLAIN = '<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><title>plain</title><p>Hello';

/** The site's page: it loads sendonce when asked, and keeps what the worker posts to it in `heard`. */
const PAGE = '<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><script>'
	+ 'window.loadSendonce = () => import("/sendonce.js"); window.loadSw = () => import("/sendonce-sw.js");'
	+ 'window.heard = []; navigator.serviceWorker.onmessage = event => window.heard.push(event.data);</script>';

/** Requests wait here on arrival while the gate is shut. */
let gate: Promise<void> = Promise.resolve();
let openGate: () => void = () => undefined;

function shutGate(): void {
	gate = new Promise(resolve => {
		openGate = resolve;
	});
}

let server: ContractServer;
let browser: Awaited<ReturnType<typeof launchBrowser>>;
let context: BrowserContext;
let workerScript: string;
/** `sendonce/sw` as a page imports it. */
let swModule: string;
/** While true, the API answers 503 before doing anything. */
let apiDown = false;
/** While true, the API answers 401 to a request without `authorization`, as one behind a bearer token does. */
let requireToken = false;
/** The requests answered 401 for want of a token. */
const unauthorized: Array<{key: string | undefined; body: string}> = [];

beforeAll(async () => {
	const built = await build({
		entryPoints: [fileURLToPath(new URL('service-worker.ts', import.meta.url))],
		bundle: true,
		format: 'iife',
		platform: 'browser',
		target: 'es2022',
		write: false,
		logLevel: 'silent',
	});
	workerScript = built.outputFiles[0]!.text;
	swModule = await bundleForBrowser(fileURLToPath(new URL('../../src/sw.ts', import.meta.url)));
	const bundle = inject('sendonceBundle');
	[server, browser] = await Promise.all([startContractServer({
		onArrival: async () => gate,
		faultFor: () => (apiDown ? {type: 'error-before', status: 503} : undefined),
		async serve(request, response) {
			const {pathname} = new URL(request.url ?? '/', 'http://localhost');
			if (request.method === 'POST' && requireToken && !request.headers.authorization) {
				const chunks: Buffer[] = [];
				for await (const chunk of request) chunks.push(chunk as Buffer);
				unauthorized.push({key: request.headers['idempotency-key'] as string | undefined, body: Buffer.concat(chunks).toString('utf8')});
				response.writeHead(401, {'content-type': 'application/json'});
				response.end('{"error":"unauthorized"}');
				return true;
			}

			if (request.method !== 'GET') return false;
			const files: Record<string, [string, string]> = {
				'/': ['text/html; charset=utf-8', PAGE],
				'/plain': ['text/html; charset=utf-8', PLAIN],
				'/sendonce.js': ['text/javascript; charset=utf-8', bundle],
				'/sw.js': ['text/javascript; charset=utf-8', workerScript],
				'/sendonce-sw.js': ['text/javascript; charset=utf-8', swModule],
			};
			const [type, body] = files[pathname] ?? ['text/plain', 'not found'];
			response.writeHead(files[pathname] ? 200 : 404, {'content-type': type, 'cache-control': 'no-store'});
			response.end(body);
			return true;
		},
	}), launchBrowser()]);
}, 60_000);
afterAll(async () => {
	await browser?.close();
	await server?.close();
});
beforeEach(async () => {
	context = await browser.newContext();
});
afterEach(async () => {
	openGate();
	await context.close();
	server.reset();
	apiDown = false;
	requireToken = false;
	unauthorized.length = 0;
});

/** A page of the site whose service worker (`/sw.js?query`) is active. */
async function pageWithWorker(query = ''): Promise<Page> {
	const page = await context.newPage();
	await page.goto(`${server.url}/`);
	await page.evaluate(async url => {
		await navigator.serviceWorker.register(url);
		await navigator.serviceWorker.ready;
	}, `/sw.js${query}`);
	return page;
}

/** Gives `page` a client opted in to Background Sync, as an app that offers it does. */
async function optIn(page: Page, retry: typeof RETRY | typeof SLOW_RETRY = RETRY): Promise<void> {
	await page.evaluate(async retry => {
		const {createClient} = await window.loadSendonce();
		const {backgroundSync} = await (window as unknown as {loadSw(): Promise<typeof import('../../src/sw.js')>}).loadSw();
		window.client = createClient({retry, onEvent: backgroundSync()});
	}, retry);
}

/** Every record in sendonce's IndexedDB store, read through the package in `page`. */
async function stored(page: Page): Promise<Record<string, {key: string; state: IntentState; attempts: number; reason?: string}>> {
	return page.evaluate(async () => Object.fromEntries(await (await window.loadSendonce()).indexedDbStore().list()) as never);
}

/** Starts sending `request` for `scope` from `page` while the API is down; resolves to its key once `attempts` reached the server. */
async function interruptedSend(page: Page, attempts: number, scope = 'contact', request: typeof ORDER = ORDER): Promise<string> {
	apiDown = true;
	const before = server.requests.length;
	const key = await page.evaluate(async ({scope, request}) => {
		const intent = await window.client.intent(scope, request);
		void intent.send();
		return intent.key;
	}, {scope, request});
	await expect.poll(() => server.requests.length, PATIENT).toBeGreaterThanOrEqual(before + attempts);
	return key;
}

/** The requests that reached the API after the first `from`. */
const since = (from: number): SeenRequest[] => server.requests.slice(from);

describe('the service worker sends what a closed tab left', () => {
	test('created while the API was down, the tab closed, the API back, the sync fires: the stored bytes with the same key, one effect, shown as succeeded later', async () => {
		const page = await pageWithWorker();
		await optIn(page);
		const key = await interruptedSend(page, 2);
		// The page asked for a sync after its first indeterminate attempt.
		expect(await page.evaluate(async () => (await navigator.serviceWorker.ready as unknown as {sync: {getTags(): Promise<string[]>}}).sync.getTags())).toEqual(['sendonce']);
		const bytes = server.requests[0]!.body;
		await page.close();
		const closedAt = server.requests.length;
		apiDown = false;

		await fireSync(context, server.url);

		await expect.poll(() => server.effects.get('o-1'), PATIENT).toBe(1);
		// A retry the page sent as it closed may still be counted after closedAt: the worker's is the last.
		expect(since(closedAt).at(-1)).toMatchObject({key, body: bytes, outcome: 201});
		expect(server.keys.every(seen => seen === key)).toBe(true);
		expect(server.requests.every(request => request.body === bytes)).toBe(true);

		const later = await context.newPage();
		await later.goto(`${server.url}/`);
		// The worker keeps the record as a note for the pages, just after the server's answer.
		await expect.poll(async () => stored(later), PATIENT).toEqual({'intent:contact': expect.objectContaining({key, state: 'succeeded'})});
		const shown = await later.evaluate(async () => {
			const {createClient} = await window.loadSendonce();
			const intent = await createClient().get('contact');
			return intent && {key: intent.key, state: intent.state, mayHaveBeenSent: intent.mayHaveBeenSent};
		});
		expect(shown).toEqual({key, state: 'succeeded', mayHaveBeenSent: true});
		// Shown once: the note is gone from the store.
		expect(await stored(later)).toEqual({});
		expect(server.totalEffects).toBe(1);
	});

	test('a page is sending when the sync fires: the worker waits on the lock, one request, one effect', async () => {
		const page = await pageWithWorker();
		await optIn(page);
		shutGate();
		const key = await page.evaluate(async order => {
			const intent = await window.client.intent('contact', order);
			(window as unknown as {sent: Promise<unknown>}).sent = intent.send();
			return intent.key;
		}, ORDER);
		await expect.poll(() => server.requests.length).toBe(1);

		await fireSync(context, server.url);
		const lock = async () => page.evaluate(async name => {
			const {held = [], pending = []} = await navigator.locks.query();
			return {held: held.filter(entry => entry.name === name).length, pending: pending.filter(entry => entry.name === name).length};
		}, `sendonce:${key}`);
		await expect.poll(lock, PATIENT).toEqual({held: 1, pending: 1});
		openGate();

		expect(await page.evaluate(async () => ((await (window as unknown as {sent: Promise<{status: string}>}).sent).status))).toBe('succeeded');
		await expect.poll(lock, PATIENT).toEqual({held: 0, pending: 0});
		expect(server.requests).toHaveLength(1);
		expect(server.keys).toEqual([key]);
		expect(server.totalEffects).toBe(1);
		await expect.poll(async () => stored(page), PATIENT).toEqual({});
	});

	test('without Background Sync, the next navigation of the origin, to a page without sendonce, sends the intent', async () => {
		const page = await pageWithWorker('?no-sync');
		await optIn(page);
		const key = await interruptedSend(page, 1);
		await page.close();
		const closedAt = server.requests.length;
		apiDown = false;

		const next = await context.newPage();
		await next.goto(`${server.url}/plain`);

		await expect.poll(() => server.effects.get('o-1'), PATIENT).toBe(1);
		expect(since(closedAt).at(-1)).toMatchObject({key, outcome: 201});
		expect(server.keys.every(seen => seen === key)).toBe(true);
		expect(await next.textContent('p')).toBe('Hello');
	});

	test('without Background Sync, a page that hides while sending hands its intent to the worker, which sends it once the tab closes', async () => {
		const page = await context.newPage();
		// As Safari and Firefox show the page.
		await page.addInitScript(() => {
			delete (window as {SyncManager?: unknown}).SyncManager;
		});
		await page.goto(`${server.url}/`);
		await page.evaluate(async () => {
			await navigator.serviceWorker.register('/sw.js?no-sync');
			await navigator.serviceWorker.ready;
		});
		// Reloaded, the page is controlled by the worker.
		await page.reload();
		expect(await page.evaluate(() => navigator.serviceWorker.controller !== null)).toBe(true);
		await optIn(page);
		const key = await interruptedSend(page, 1);

		await page.evaluate(() => window.dispatchEvent(new Event('pagehide')));
		// The worker waits on the intent's lock while the page holds it.
		await expect.poll(async () => page.evaluate(async name => (await navigator.locks.query()).pending?.filter(lock => lock.name === name).length, `sendonce:${key}`), PATIENT).toBe(1);
		await page.close();
		const closedAt = server.requests.length;
		apiDown = false;

		await expect.poll(() => server.effects.get('o-1'), PATIENT).toBe(1);
		expect(since(closedAt).at(-1)).toMatchObject({key, outcome: 201});
		expect(server.keys.every(seen => seen === key)).toBe(true);
	});

	test('without Background Sync, a worker sends what the pages left when it activates', async () => {
		const page = await context.newPage();
		await page.goto(`${server.url}/`);
		await optIn(page);
		const key = await interruptedSend(page, 1);
		await page.close();
		apiDown = false;

		const registering = await pageWithWorker('?no-sync');

		await expect.poll(() => server.effects.get('o-1'), PATIENT).toBe(1);
		expect(server.keys.every(seen => seen === key)).toBe(true);
		// The worker told the open page.
		await expect.poll(async () => registering.evaluate(() => (window as unknown as {heard: unknown[]}).heard), PATIENT).toEqual([
			{type: 'sendonce:settled', event: expect.objectContaining({type: 'settled', key, scope: 'contact', outcome: 'succeeded', status: 201})},
		]);
	});
});

describe('secrets: the worker has only its own headers()', () => {
	/**
	 * A page's attempt meets the API down, its tab closes, the API comes back behind a bearer
	 * token, and the sync fires for the worker at `/sw.js?query`. Resolves to the intent's key.
	 */
	async function syncBehindToken(query: string): Promise<string> {
		const page = await pageWithWorker(query);
		await optIn(page, SLOW_RETRY);
		const key = await interruptedSend(page, 1);
		await page.close();
		apiDown = false;
		requireToken = true;
		await fireSync(context, server.url);
		return key;
	}

	test('a headers() in the worker supplies the token', async () => {
		const key = await syncBehindToken('?token=t-1');

		await expect.poll(() => server.effects.get('o-1'), PATIENT).toBe(1);
		expect(unauthorized).toEqual([]);
		expect(server.requests.at(-1)).toMatchObject({key, outcome: 201, headers: {authorization: 'Bearer t-1'}});
	});

	test('without it, a 401 after a possible send leaves the intent unresolved, never failed', async () => {
		const key = await syncBehindToken('');

		await expect.poll(() => unauthorized.length, PATIENT).toBe(1);
		expect(unauthorized[0]!.key).toBe(key);
		const later = await context.newPage();
		await later.goto(`${server.url}/`);
		await expect.poll(async () => stored(later), PATIENT).toEqual({'intent:contact': expect.objectContaining({key, state: 'unresolved', reason: 'refused'})});
		expect(server.totalEffects).toBe(0);
	});

	test('without it, a 401 to an intent never attempted still leaves it unresolved for the page: the worker\'s missing token never fails the user\'s action', async () => {
		const page = await pageWithWorker('');
		await optIn(page);
		const key = await page.evaluate(async () => (await window.client.intent('contact', {url: '/orders', json: {order: 'o-1'}})).key);
		await page.close();
		requireToken = true;
		await fireSync(context, server.url);

		await expect.poll(() => unauthorized.length, PATIENT).toBe(1);
		expect(unauthorized[0]!.key).toBe(key);
		const later = await context.newPage();
		await later.goto(`${server.url}/`);
		await expect.poll(async () => stored(later), PATIENT).toEqual({'intent:contact': expect.objectContaining({key, state: 'unresolved', reason: 'refused', attempts: 1})});
		expect(server.totalEffects).toBe(0);
	});
});

test('the worker never sends an unresolved or an expired intent', async () => {
	const page = await pageWithWorker();
	await optIn(page);
	const keys = await page.evaluate(async () => {
		const {indexedDbStore} = await window.loadSendonce();
		const made: Record<string, string> = {};
		for (const order of ['unresolved', 'expired', 'pending']) made[order] = (await window.client.intent(order, {url: '/orders', json: {order}})).key;
		// As a page leaves them: one that ran out of retries, one sending when its window closed.
		const store = indexedDbStore();
		await store.update!('intent:unresolved', old => ({...old as object, state: 'unresolved', attempts: 3, reason: 'exhausted'}));
		await store.update!('intent:expired', old => ({...old as object, state: 'sending', attempts: 1, expiresAt: Date.now() - 1}));
		return made;
	});
	await page.close();

	await fireSync(context, server.url);

	await expect.poll(() => server.effects.get('pending'), PATIENT).toBe(1);
	expect(server.keys).toEqual([keys.pending]);
	const later = await context.newPage();
	await later.goto(`${server.url}/`);
	await expect.poll(async () => stored(later), PATIENT).toEqual({
		'intent:unresolved': expect.objectContaining({key: keys.unresolved, state: 'unresolved', attempts: 3, reason: 'exhausted'}),
		'intent:expired': expect.objectContaining({key: keys.expired, state: 'expired', attempts: 1}),
		// The worker's note for the page, until a page reads it.
		'intent:pending': expect.objectContaining({key: keys.pending, state: 'succeeded'}),
	});
	expect(server.totalEffects).toBe(1);
});

describe('a worker stopped mid-retry', () => {
	/** Stops the origin's running service worker, as the browser may whenever no `waitUntil` holds it. */
	async function stopWorker(): Promise<void> {
		const blank = await context.newPage();
		const session = await context.newCDPSession(blank);
		const running = new Set<string>();
		session.on('ServiceWorker.workerVersionUpdated', ({versions}) => {
			for (const version of versions) {
				if (version.runningStatus === 'running') running.add(version.versionId);
				else running.delete(version.versionId);
			}
		});
		await session.send('ServiceWorker.enable');
		await expect.poll(() => running.size, PATIENT).toBeGreaterThan(0);
		// Stopped again while it still reports running: on a loaded machine, an event queued before
		// the stop can start it once more before the stop is seen.
		await expect.poll(async () => {
			for (const versionId of running) await session.send('ServiceWorker.stopWorker', {versionId});
			return running.size;
		}, PATIENT).toBe(0);
		await blank.close();
	}

	test('stopped while it waits to retry, the next trigger sends the intent with its key: one effect', async () => {
		const page = await pageWithWorker();
		await optIn(page);
		const key = await interruptedSend(page, 1);
		await page.close();
		const closedAt = server.requests.length;

		// The sync's sends meet the API down and wait to retry; the browser stops the worker.
		await fireSync(context, server.url);
		await expect.poll(() => since(closedAt).length, PATIENT).toBeGreaterThanOrEqual(2);
		await stopWorker();
		const stoppedAt = server.requests.length;
		apiDown = false;

		// The next trigger: a sync (Chromium may also fire the page's registered one again itself).
		await fireSync(context, server.url);

		await expect.poll(() => server.effects.get('o-1'), PATIENT).toBe(1);
		expect(since(stoppedAt).at(-1)).toMatchObject({key, outcome: 201});
		expect(server.keys.every(seen => seen === key)).toBe(true);
		expect(server.totalEffects).toBe(1);
	});
});

test('a sync that fires while the worker sends an older intent also sends the one stored since: each once', async () => {
	const page = await pageWithWorker();
	await optIn(page);
	const older = await page.evaluate(async () => (await window.client.intent('older', {url: '/orders', json: {order: 'older'}})).key);
	await page.close();
	// The worker's send of the older intent is held at the server.
	shutGate();
	await fireSync(context, server.url);
	await expect.poll(() => server.requests.length, PATIENT).toBe(1);

	// A tab stores a new intent and crashes before sending it; its sync fires while the worker still sends.
	const next = await context.newPage();
	await next.goto(`${server.url}/`);
	await optIn(next);
	const newer = await next.evaluate(async () => (await window.client.intent('newer', {url: '/orders', json: {order: 'newer'}})).key);
	await next.close();
	await fireSync(context, server.url);
	openGate();

	await expect.poll(() => server.effects.get('newer'), PATIENT).toBe(1);
	expect(server.effects.get('older')).toBe(1);
	expect(server.requests.map(request => request.key).sort()).toEqual([older, newer].sort());
	expect(server.totalEffects).toBe(2);
});

test('two tabs and the worker resume the same 100 stored intents at once, marked in batches: each is sent once, one effect each (issue 32)', async () => {
	const first = await pageWithWorker();
	await optIn(first);
	const keys = await first.evaluate(async () => Promise.all(Array.from({length: 100}, async (_, index) => (await window.client.intent(`order-${index}`, {url: '/orders', json: {order: `o-${index}`}})).key)));
	const second = await context.newPage();
	await second.goto(`${server.url}/`);
	await optIn(second);

	// Held at the server until all three have started, so that their batches meet.
	shutGate();
	const resumes = [first, second].map(async page => page.evaluate(async () => (await window.client.resume()).map(result => result.status)));
	await fireSync(context, server.url);
	await expect.poll(() => server.requests.length, PATIENT).toBeGreaterThan(0);
	openGate();
	const [one, two] = await Promise.all(resumes);

	await expect.poll(() => server.totalEffects, PATIENT).toBe(100);
	for (let index = 0; index < 100; index++) expect(server.effects.get(`o-${index}`), `o-${index}`).toBe(1);
	// One request per key: no intent was sent by two of them, and none twice.
	await expect.poll(async () => Object.keys(await stored(first)).length, PATIENT).toBe(0);
	expect(server.requests.map(request => request.key).sort()).toEqual([...keys].sort());
	expect([...one!, ...two!].every(status => status === 'succeeded')).toBe(true);
});
