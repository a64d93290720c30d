/*
 * The client's guarantees in one browser engine, written once for every engine: each scenario
 * drives its browser only through the small interface of engine.ts.
 */
import {mkdtemp, rm} from 'node:fs/promises';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {afterAll, afterEach, beforeAll, describe, expect, test} from 'vitest';
import type {IntentResult} from '../../src/index.js';
import {PNG} from '../integration/binary.js';
import type {Browser, Engine, LaunchOptions, Tab} from './engine.js';
import {startSite, type Site} from './site.js';

/** Fast retries: a 409 while the server still works is asked again within a few hundred ms. */
const OPTIONS = {retry: {limit: 30, baseDelay: 100, maxDelay: 400}, timeout: 10_000} as const;
const ORDER = {url: '/orders', json: {order: 'o-1', total: 42}} as const;
const BYTES = '{"order":"o-1","total":42}';
/** A retry rests a while and a worker may have to start: wait longer than a poll's default. */
const PATIENT = {timeout: 15_000};

/** What a scenario is given: the site, and browsers that are closed after it. */
interface Run {
	readonly site: Site;
	/** The site's URL of `path`. */
	url(path?: string): string;
	/** A browser with empty storage; with options, a process of its own. */
	launch(options?: LaunchOptions): Promise<Browser>;
	/** An empty directory for a profile, removed after the scenario. */
	profile(): Promise<string>;
}

/** A result as plain data. */
type Outcome = Pick<IntentResult, 'status' | 'key'> & {replayed?: boolean; reason?: string; data?: unknown};

/** In `tab`, a fresh client over the default store sends ORDER as `checkout`: the outcome, and whether the client was durable. */
async function sendOrder(tab: Tab): Promise<{outcome: Outcome; durable: boolean}> {
	return tab.evaluate(async ({options, order}) => {
		const {createClient} = await window.loadSendonce();
		const client = createClient({...options, onEvent: window.recordEvent});
		const result = await (await client.intent('checkout', order)).send();
		const {status, key} = result;
		return {outcome: {status, key, ...('replayed' in result ? {replayed: result.replayed} : {})}, durable: await client.durable};
	}, {options: OPTIONS, order: ORDER});
}

/** What sendonce keeps in IndexedDB, read through the package in `tab`. */
async function stored(tab: Tab): Promise<Record<string, {key: string; state: string; attempts: number}>> {
	return tab.evaluate(async () => Object.fromEntries(await (await window.loadSendonce()).indexedDbStore().list()) as never, undefined);
}

/** In `tab`, a fresh client lists what is stored and resumes it. */
async function resumeAll(tab: Tab): Promise<{listed: Array<{key: string; state: string}>; results: Outcome[]}> {
	return tab.evaluate(async options => {
		const {createClient} = await window.loadSendonce();
		const client = createClient(options);
		const listed = (await client.list()).map(({key, state}) => ({key, state}));
		const results = (await client.resume()).map(({status, key}) => ({status, key}));
		return {listed, results};
	}, OPTIONS);
}

const scenarios: Record<string, (run: Run) => Promise<void>> = {
	async 'send: one request with the stored bytes and a key, one effect, nothing left stored'({site, url, launch}) {
		const tab = await (await launch()).open(url('/'));
		const {outcome, durable} = await sendOrder(tab);

		expect(outcome).toEqual({status: 'succeeded', key: expect.stringMatching(/^[\da-f-]{36}$/), replayed: false});
		expect(durable).toBe(true);
		expect(site.server.requests.map(({key, body, outcome}) => ({key, body, outcome}))).toEqual([{key: outcome.key, body: BYTES, outcome: 201}]);
		expect(site.server.effects.get('o-1')).toBe(1);
		await expect.poll(async () => stored(tab)).toEqual({});
	},

	async 'a lost reply, then 503 until retries run out: unresolved; Retry once the server is back replays the one effect'({site, url, launch}) {
		const tab = await (await launch()).open(url('/'));
		site.server.faults.push({type: 'lose-reply'});
		site.apiDown = true;
		const first = await tab.evaluate(async order => {
			const {createClient} = await window.loadSendonce();
			const intent = await createClient({retry: {limit: 3, baseDelay: 50, maxDelay: 100}}).intent('checkout', order);
			window.kept.intent = intent;
			const result = await intent.send();
			return {status: result.status, key: result.key, reason: 'reason' in result ? result.reason : undefined};
		}, ORDER);

		expect(first).toEqual({status: 'unresolved', key: expect.any(String), reason: 'exhausted'});
		expect(site.server.effects.get('o-1')).toBe(1);
		// The work done, its reply lost; then every retry (and any resend of the browser's own)
		// met the server down.
		expect(site.server.requests[0]).toMatchObject({key: first.key, body: BYTES, outcome: 'dropped'});
		const later = site.server.requests.slice(1).map(request => request.outcome);
		expect(later.length).toBeGreaterThanOrEqual(1);
		expect(later.every(outcome => outcome === 503)).toBe(true);

		site.apiDown = false;
		const again = await tab.evaluate(async () => {
			const result = await (window.kept.intent as {send(): Promise<IntentResult>}).send();
			return {status: result.status, key: result.key, replayed: result.status === 'succeeded' ? result.replayed : undefined};
		}, undefined);

		expect(again).toEqual({status: 'succeeded', key: first.key, replayed: true});
		expect(site.server.effects.get('o-1')).toBe(1);
		expect(new Set(site.server.keys)).toEqual(new Set([first.key]));
		expect(new Set(site.server.requests.map(request => request.body))).toEqual(new Set([BYTES]));
	},

	async 'the request lost before the server, the server down, then up: check() says not sent, the late original is refused, a new press sends once'({site, url, launch}) {
		const tab = await (await launch()).open(url('/'));
		site.server.faults.push({type: 'drop-before'});
		site.apiDown = true;
		const first = await tab.evaluate(async order => {
			const {createClient} = await window.loadSendonce();
			const client = createClient({retry: {limit: 2, baseDelay: 50, maxDelay: 100}, checks: true});
			const intent = await client.intent('checkout', order);
			window.kept.client = client;
			window.kept.intent = intent;
			const {status, key} = await intent.send();
			return {status, key};
		}, ORDER);
		expect(first).toEqual({status: 'unresolved', key: expect.any(String)});

		site.apiDown = false;
		const found = await tab.evaluate(async () => {
			const intent = window.kept.intent as import('../../src/index.js').Intent;
			const {status} = await intent.check();
			return {status, state: intent.state};
		}, undefined);
		expect(found).toEqual({status: 'not-sent', state: 'not-sent'});
		await expect.poll(async () => stored(tab)).toEqual({});
		// The original request, delivered late: same key, same bytes.
		const late = await fetch(url('/orders'), {method: 'POST', headers: {'content-type': 'application/json', 'idempotency-key': first.key}, body: BYTES});
		expect(late.status).toBe(410);
		expect(site.server.effects.get('o-1')).toBeUndefined();

		const again = await tab.evaluate(async order => {
			const {status, key} = await (window.kept.client as import('../../src/index.js').SendOnceClient).send('checkout', order);
			return {status, key};
		}, ORDER);
		expect(again).toEqual({status: 'succeeded', key: expect.not.stringMatching(first.key)});
		expect(site.server.effects.get('o-1')).toBe(1);
	},

	async 'a reload while the first attempt is in flight: the next page resumes it with the same key, one effect'({site, url, launch}) {
		let workEnds!: () => void;
		site.server.faults.push({type: 'hold', until: new Promise<void>(resolve => {
			workEnds = resolve;
		})});
		const tab = await (await launch()).open(url('/'));
		const key = await tab.evaluate(async ({options, order}) => {
			const {createClient} = await window.loadSendonce();
			const intent = await createClient(options).intent('checkout', order);
			void intent.send();
			return intent.key;
		}, {options: OPTIONS, order: ORDER});
		await expect.poll(() => site.server.requests.length).toBe(1);

		await tab.reload();
		// Firefox fails the page's pending fetch as it unloads, and the page may start a second
		// attempt before it goes: one or two attempts are stored.
		const record = await stored(tab);
		expect(record).toEqual({'intent:checkout': expect.objectContaining({key, state: 'sending'})});
		expect(record['intent:checkout']!.attempts).toBeGreaterThanOrEqual(1);
		workEnds();
		const {listed, results} = await resumeAll(tab);

		expect(listed).toEqual([{key, state: 'sending'}]);
		expect(results).toEqual([{status: 'succeeded', key}]);
		expect(site.server.effects.get('o-1')).toBe(1);
		expect(new Set(site.server.keys)).toEqual(new Set([key]));
		expect(new Set(site.server.requests.map(request => request.body))).toEqual(new Set([BYTES]));
		await expect.poll(async () => stored(tab)).toEqual({});
	},

	async 'a browser restart on the same profile: the stored intent resumes with its key, one effect'({site, url, launch, profile}) {
		const directory = await profile();
		const first = await launch({profile: directory});
		const key = await (await first.open(url('/'))).evaluate(async ({options, order}) => {
			const {createClient} = await window.loadSendonce();
			return (await createClient(options).intent('checkout', order)).key;
		}, {options: OPTIONS, order: ORDER});
		await first.close();

		const tab = await (await launch({profile: directory})).open(url('/'));
		const {listed, results} = await resumeAll(tab);

		expect(listed).toEqual([{key, state: 'pending'}]);
		expect(results).toEqual([{status: 'succeeded', key}]);
		expect(site.server.keys).toEqual([key]);
		expect(site.server.effects.get('o-1')).toBe(1);
	},

	async 'two tabs press at the same time: one key, one effect, both told it succeeded'({site, url, launch}) {
		const browser = await launch();
		const tabs = [await browser.open(url('/')), await browser.open(url('/'))];
		// The work is slow enough for the second press to come while the first is sent.
		site.server.faults.push({type: 'slow', ms: 500});
		// Started, not awaited: a driver may run one tab's script at a time.
		for (const tab of tabs) {
			await tab.evaluate(async ({options, order}) => {
				const {createClient} = await window.loadSendonce();
				const client = createClient(options);
				window.kept.sent = client.intent('checkout', order).then(async intent => intent.send());
			}, {options: OPTIONS, order: ORDER});
		}

		const outcomes: Outcome[] = [];
		for (const tab of tabs) {
			outcomes.push(await tab.evaluate(async () => {
				const {status, key} = await (window.kept.sent as Promise<IntentResult>);
				return {status, key};
			}, undefined));
		}

		const key = site.server.keys[0]!;
		expect(outcomes).toEqual([{status: 'succeeded', key}, {status: 'succeeded', key}]);
		expect(new Set(site.server.keys)).toEqual(new Set([key]));
		expect(site.server.effects.get('o-1')).toBe(1);
		expect(site.server.totalEffects).toBe(1);
	},

	async 'site data blocked by the browser\'s setting: the press is still sent once, and durable says whether storage works'({site, url, launch}) {
		const tab = await (await launch({blockSiteData: true})).open(url('/'));
		const usable = await tab.evaluate(async () => {
			const session = (() => {
				try {
					sessionStorage.setItem('probe', '1');
					sessionStorage.removeItem('probe');
					return true;
				} catch {
					return false;
				}
			})();
			const indexedDb = await new Promise<boolean>(resolve => {
				try {
					const request = indexedDB.open('probe');
					request.onsuccess = () => {
						request.result.close();
						resolve(true);
					};
					request.onerror = () => resolve(false);
				} catch {
					resolve(false);
				}
			});
			return session || indexedDb;
		}, undefined);
		const sent = await tab.evaluate(async ({options, order}) => {
			const {createClient} = await window.loadSendonce();
			const client = createClient(options);
			try {
				const intent = await client.intent('checkout', order);
				const result = await intent.send();
				return {status: result.status, key: result.key, durable: await client.durable};
			} catch (error) {
				return {rejected: `${(error as Error).name}: ${(error as Error).message}`};
			}
		}, {options: OPTIONS, order: ORDER});

		expect(sent).toEqual({status: 'succeeded', key: expect.any(String), durable: usable});
		expect(site.server.keys).toEqual([(sent as {key: string}).key]);
		expect(site.server.effects.get('o-1')).toBe(1);
	},

	async 'neither IndexedDB nor sessionStorage: memory, not durable, store-degraded, the press sent once'({site, url, launch}) {
		const tab = await (await launch()).open(url('/?no-storage'));
		const {outcome, durable} = await sendOrder(tab);

		expect(outcome).toMatchObject({status: 'succeeded'});
		expect(durable).toBe(false);
		expect((await tab.evaluate(() => window.sendonceEvents, undefined)).filter(event => event.type === 'store-degraded')).toEqual([{type: 'store-degraded', store: 'memory'}]);
		expect(site.server.keys).toEqual([outcome.key]);
		expect(site.server.effects.get('o-1')).toBe(1);
	},

	async 'the service worker sends what a closed tab left, at the next navigation of the origin'({site, url, launch}) {
		const browser = await launch();
		const tab = await browser.open(url('/?no-sync'));
		await tab.evaluate(async retry => {
			await navigator.serviceWorker.register('/sw.js?no-sync');
			await navigator.serviceWorker.ready;
			const {createClient} = await window.loadSendonce();
			const {backgroundSync} = await window.loadSw();
			window.kept.client = createClient({retry, onEvent: backgroundSync()});
		}, OPTIONS.retry);
		site.apiDown = true;
		const key = await tab.evaluate(async order => {
			const intent = await (window.kept.client as import('../../src/index.js').SendOnceClient).intent('contact', order);
			void intent.send();
			return intent.key;
		}, ORDER);
		await expect.poll(() => site.server.requests.length, PATIENT).toBeGreaterThanOrEqual(1);
		const next = await browser.open();
		await tab.close();
		const closedAt = site.server.requests.length;
		site.apiDown = false;

		await next.goto(url('/plain'));

		await expect.poll(() => site.server.effects.get('o-1'), PATIENT).toBe(1);
		expect(site.server.requests.slice(closedAt).at(-1)).toMatchObject({key, body: BYTES, outcome: 201});
		expect(new Set(site.server.keys)).toEqual(new Set([key]));
		expect(await next.evaluate(() => document.querySelector('p')?.textContent, undefined)).toBe('Hello');
	},

	async 'a binary answer reaches sendonce/fetch byte for byte'({site, url, launch}) {
		const tab = await (await launch()).open(url('/'));
		const answer = await tab.evaluate(async () => {
			const {createClient} = await window.loadSendonce();
			const {createFetch} = await window.loadFetch();
			const response = await createFetch(createClient())('/orders', {
				method: 'POST',
				headers: {'content-type': 'application/json'},
				body: JSON.stringify({order: 'o-png', answer: 'png'}),
				intent: 'avatar',
			});
			return {status: response.status, type: response.headers.get('content-type'), bytes: [...new Uint8Array(await response.arrayBuffer())]};
		}, undefined);

		expect(answer).toEqual({status: 201, type: 'image/png', bytes: [...PNG]});
		expect(site.server.effects.get('o-png')).toBe(1);
		expect(site.server.keys).toEqual([expect.stringMatching(/^[\da-f-]{36}$/)]);
	},
};

/**
 * Every scenario in `engine`, each in browsers of its own. A missing engine skips them with
 * one line; with CI=true it fails the file instead.
 */
export async function engineSuite(engine: Engine): Promise<void> {
	const missing = await engine.missing();
	if (missing !== undefined && process.env.CI === 'true') {
		throw new Error(`${missing}: with CI=true a missing engine fails the run (.ci/run installs it from Debian)`);
	}

	if (missing !== undefined) console.log(`skipped: ${missing}`);
	const title = missing === undefined ? await engine.version() : engine.name;

	describe.skipIf(missing !== undefined)(title, () => {
		let site: Site;
		const browsers: Browser[] = [];
		const directories: string[] = [];
		beforeAll(async () => {
			site = await startSite();
		});
		afterAll(async () => {
			await engine.dispose();
			await site?.server.close();
		});
		afterEach(async () => {
			await Promise.all(browsers.splice(0).map(async browser => browser.close()));
			await Promise.all(directories.splice(0).map(async directory => rm(directory, {recursive: true, force: true})));
			site.server.reset();
			site.apiDown = false;
		});

		for (const [name, scenario] of Object.entries(scenarios)) {
			test(name, async () => scenario({
				site,
				url: (path = '/') => `${site.server.url}${path}`,
				async launch(options) {
					const browser = await (options ? engine.launch(options) : engine.fresh());
					let closed = false;
					const once = {
						open: browser.open.bind(browser),
						async close() {
							if (closed) return;
							closed = true;
							await browser.close();
						},
					};
					browsers.push(once);
					return once;
				},
				async profile() {
					const directory = await mkdtemp(join(tmpdir(), 'sendonce-engine-profile-'));
					directories.push(directory);
					return directory;
				},
			}));
		}
	});
}
