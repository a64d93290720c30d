import {IDBFactory} from 'fake-indexeddb';
import fc from 'fast-check';
import {afterAll, beforeAll, expect, test, vi} from 'vitest';
import {createClient, indexedDbStore, type Intent, type IntentResult, type IntentStore, type SendOnceClient, type SendOnceEvent} from '../../src/index.js';
import {installSendOnce, SEND_TYPE, SYNC_TAG, type ServiceWorkerScope} from '../../src/sw.js';
import {startContractServer, type ContractServer, type Fault} from '../server/contract-server.js';

/*
 * A model-based test (issues 10 and 31): two or three tabs and a service worker share one store
 * (IndexedDB, fake-indexeddb: one connection each, with leases, as Node has no Web Locks),
 * against the contract server with random faults, while random commands interleave: intent()
 * with the same or another body, send, abort, discard, resume, clear, reloads (a page dies
 * mid-flight, a new one opens on the same store), clock jumps, store failures, a `headers()`
 * that throws once, and pages going offline and back.
 *
 * The worker is `installSendOnce` (sendonce/sw), driven through its listeners as a browser
 * would: a Background Sync, a page's `sendonce:send` message, a navigation, or the activation
 * of a new version (which replaces the worker before it, mid-flight or not). Each sends the
 * stored intents (those of dead pages, and those pages are sending at that very moment) under
 * their stored keys, claims them with the pages' leases, and leaves a note (`succeeded`) for the
 * pages of what it delivered. A worker may also die mid-flight (its fetches and its store never
 * answer again, as a dead page's); the next event starts a new one. Its outcomes are heard as a
 * page's are, and the work it makes the server do counts as any tab's.
 *
 * After every command:
 * - a send that ended left its page's snapshot saying what its result says (never `sending`);
 * - no user action (a scope and body between two choices that end it: replace, discard, clear,
 *   or a definitive outcome the app was told, by a page or the worker) is carried out by the
 *   server under two keys;
 * - no unsettled intent is lost: each is stored, or settled, or dropped by the user.
 * At the end, once faults stop: every send() of a living page, and every event of a living
 * worker, settled; a `failed` outcome did no work, and a `succeeded` one did it once.
 *
 * SENDONCE_MODEL_RUNS sets the number of runs (default 25). SENDONCE_MODEL_SEED and
 * SENDONCE_MODEL_PATH replay a counterexample fast-check printed (its `seed` and `path`), with
 * SENDONCE_MODEL_REPLAY its `replayPath` once shrunk. SENDONCE_MODEL_TRACE=1 adds to the story a
 * counterexample prints what the pages and the worker did after each command (keys made,
 * attempts, retries, outcomes, by the keys' first characters); SENDONCE_MODEL_TRACE=writes adds
 * every record they wrote too (state, attempts, lease).
 */

/**
 * The worker makes its own store (`keepDelivered(indexedDbStore())`): while `wrap` is set (while
 * a worker is installed), the store it makes is wrapped as a page's is, so that it can die.
 */
const workerStore = vi.hoisted(() => ({wrap: undefined as ((store: IntentStore) => IntentStore) | undefined}));
vi.mock('../../src/stores/indexeddb.js', async importOriginal => {
	const original = await importOriginal<typeof import('../../src/stores/indexeddb.js')>();
	return {
		...original,
		indexedDbStore() {
			const store = original.indexedDbStore();
			return workerStore.wrap ? workerStore.wrap(store) : store;
		},
	};
});

const RUNS = Number(process.env.SENDONCE_MODEL_RUNS ?? 25);
const TRACE = process.env.SENDONCE_MODEL_TRACE !== undefined;
const TRACE_WRITES = process.env.SENDONCE_MODEL_TRACE === 'writes';
const SCOPES = ['a', 'b'] as const;
const BODIES = ['x', 'y'] as const;
type Scope = typeof SCOPES[number];
type Body = typeof BODIES[number];

let server: ContractServer;
/**
 * The keys of the requests the server received, checks of a key left out: a check carries no body
 * and can run nothing, so a key that was only checked was never sent.
 */
const sentKeys = () => server.requests.filter(request => request.headers['idempotency-check'] === undefined).map(request => request.key);

/** Keys under which the server did the work, in order. */
const worked: Array<string | undefined> = [];
beforeAll(async () => {
	// The server keeps its own time: only the clients' clock jumps.
	const started = Date.now();
	const origin = performance.now();
	server = await startContractServer({
		// It answers checks of a key: a page's check() closes a key it can prove never ran.
		checks: true,
		// Real time: the pages' clocks start from it, and a check proves a key unused only since then.
		now: () => started + performance.now() - origin,
		work(body, key) {
			// A request a dead page of an earlier run had already put on the wire may arrive after
			// that run ended: it is that run's work, not this one's.
			const order = (body as {order?: unknown} | undefined)?.order;
			if (typeof order !== 'string' || Number(order.split('/')[0]) === run) worked.push(key);
			return undefined;
		},
	});
});
afterAll(async () => server.close());

/**
 * A page's (or the worker's) view of the shared store, its own connection to the database: once
 * the page is dead, nothing it starts ever finishes.
 * `written` sees every value a change writes (undefined: deleted) over what was there, so that
 * the model learns each key the moment a page makes it.
 */
function pageStore(shared: IntentStore, page: {dead: boolean}, failing: {on: boolean}, written: (value: unknown, old: unknown) => void): IntentStore {
	const watch = (updater: (old: unknown) => unknown) => (old: unknown) => {
		const next = updater(old);
		if (next !== old) written(next, old);
		return next;
	};

	const never = new Promise<never>(() => undefined);
	const guard = <A extends unknown[], R>(operation: (...args: A) => Promise<R>, writes: boolean) => async (...args: A): Promise<R> => {
		if (page.dead) return never;
		if (writes && failing.on) throw Object.assign(new Error('The quota has been exceeded.'), {name: 'QuotaExceededError'});
		const result = await operation(...args);
		return page.dead ? never : result;
	};

	return {
		shared: true,
		durable: true,
		get: guard(async id => shared.get(id), false),
		list: guard(async () => shared.list(), false),
		set: guard(async (id, value) => {
			written(value, undefined);
			await shared.set(id, value);
		}, true),
		delete: guard(async id => shared.delete(id), true),
		// A new intent's write-ahead (an IndexedDB `add`): what it writes is learnt once written,
		// since where something is stored already the updater decides instead.
		insert: guard(async (id, value, updater) => {
			let asked = false;
			await shared.insert!(id, value, old => {
				asked = true;
				return watch(updater)(old);
			});
			if (!asked) written(value, undefined);
		}, true),
		update: guard(async (id, updater) => shared.update!(id, watch(updater)), true),
		updateMany: guard(async updates => shared.updateMany!(updates.map(([id, updater]) => [id, watch(updater)])), true),
		clear: guard(async () => shared.clear!(), true),
	};
}

/** A page's (or the worker's) network: once the page is dead, no request leaves and no answer comes in. */
function pageFetch(page: {dead: boolean}): (input: RequestInfo | URL, init?: RequestInit) => Promise<Response> {
	const never = new Promise<never>(() => undefined);
	return async (input, init) => {
		if (page.dead) return never;
		const response = await fetch(input, init);
		if (!page.dead) return response;
		await response.body?.cancel().catch(() => undefined);
		return never;
	};
}

interface Tab {
	readonly page: {dead: boolean};
	/** The scope an `intent(…, {replace: true})` of this page is replacing, while it runs. */
	replacing?: Scope | undefined;
	readonly client: SendOnceClient;
	readonly held: Map<Scope, Intent>;
	readonly controllers: Map<Scope, AbortController>;
	/** The page's next `headers()` throws (its auth layer has no token yet). */
	failHeaders: boolean;
	/** What the page's `isOnline()` says. */
	offline: boolean;
}

interface KeyInfo {
	scope: Scope;
	body: Body;
	/** The user action (scope, body, epoch) the key was made for. */
	epoch: number;
	/** `not-sent`: a check (a page's, or a send that met the key closed) told the user it never ran. */
	status: 'open' | 'succeeded' | 'failed' | 'not-sent' | 'dropped';
	/** Replaced by another body as never sent (the scope table): it must never reach the server. */
	neverSent?: boolean;
	/** Replaced by another body after the server saw it: settled somewhere, its outcome not yet heard. */
	settling?: boolean;
	/** When the key's window ends (the pages' clock), as the page stored it. */
	expiresAt: number;
	/** A page stored it as expired. */
	expired?: boolean;
}

/** The clients' default `window`: a never-sent intent past it is replaced by a new press. */
const WINDOW_MS = 86_400_000;

/** The service worker running now: its listeners, called as the browser calls them. */
interface RunningWorker {
	readonly page: {dead: boolean};
	/** Dispatches an event of `type` to the worker, and resolves to what its `waitUntil` was given. */
	fire(type: string, extra: object): Promise<unknown>;
}

type Trigger = 'activate' | 'sync' | 'message' | 'navigation';

/** The state of one run: the pages, the worker, and what the user was told and chose. */
class World {
	/** The model's own connection to the run's database (a fresh fake-indexeddb each run). */
	readonly shared = indexedDbStore();
	readonly failing = {on: false};
	readonly tabs: Array<Tab | undefined> = [undefined, undefined, undefined];
	/** The worker now running, if one is; a dead one is gone. */
	worker: RunningWorker | undefined;
	/** Workers started, events fired at them, and deliveries they made. */
	readonly workers = {started: 0, events: 0, delivered: 0};
	readonly keys = new Map<string, KeyInfo>();
	readonly epochs = new Map<string, number>();
	/**
	 * Sends and resumes started by pages, and the events a worker keeps itself alive for, with
	 * whether their page (or worker) still lives.
	 */
	readonly pending: Array<{promise: Promise<unknown>; page: {dead: boolean}; done: boolean}> = [];
	/** The commands run, and with SENDONCE_MODEL_TRACE, what the pages and the worker did in between. */
	readonly log: string[] = [];
	commands = 0;
	/** Sends whose page's snapshot disagreed with their result. */
	readonly disagreements: string[] = [];

	constructor(readonly run: number) {}

	url(): string {
		return `${server.url}/orders`;
	}

	request(scope: Scope, body: Body) {
		return {url: this.url(), json: {order: `${this.run}/${scope}/${body}`}};
	}

	epoch(scope: Scope, body: Body): number {
		return this.epochs.get(`${scope}/${body}`) ?? 0;
	}

	/** The user's choice or a definitive outcome ends the action: the same press later is a new one. */
	endAction(scope: Scope, body: Body): void {
		this.epochs.set(`${scope}/${body}`, this.epoch(scope, body) + 1);
	}

	drop(filter: (info: KeyInfo) => boolean): void {
		for (const info of this.keys.values()) {
			if (info.status === 'open' && filter(info)) {
				info.status = 'dropped';
				this.endAction(info.scope, info.body);
			}
		}
	}

	/** What pages' checks found, by outcome. */
	readonly checked = new Map<string, number>();

	/** A definitive outcome a page's client, or the worker's, settled an intent with: the action ends. */
	heard(event: SendOnceEvent): void {
		if (event.type === 'checked') {
			const found = event.reason ? `${event.outcome} (${event.reason})` : event.outcome;
			this.checked.set(found, (this.checked.get(found) ?? 0) + 1);
		}
		if (event.type !== 'settled' || (event.outcome !== 'succeeded' && event.outcome !== 'failed' && event.outcome !== 'not-sent')) return;
		const info = this.keys.get(event.key);
		if (!info) return;
		if (info.status === 'open' || (info.status === 'dropped' && info.settling)) info.status = event.outcome;
		this.endAction(info.scope, info.body);
	}

	open(slot: number): Tab {
		const page = {dead: false};
		const client = createClient({
			store: pageStore(indexedDbStore(), page, this.failing, (value, old) => {
				this.wrote(`tab ${slot}`, value, old);
				this.learn(value, `tab ${slot}`, tab);
			}),
			headers() {
				if (!tab.failHeaders) return {};
				tab.failHeaders = false;
				throw new Error('no token yet');
			},
			isOnline: () => !tab.offline,
			fetch: pageFetch(page),
			timeout: 100,
			retry: {limit: 3, baseDelay: 5, maxDelay: 20, budget: false},
			checks: true,
			onEvent: event => {
				if (!page.dead) this.trace(`tab ${slot}`, event);
				this.heard(event);
			},
		});
		const tab: Tab = {page, client, held: new Map(), controllers: new Map(), failHeaders: false, offline: false};
		this.tabs[slot] = tab;
		return tab;
	}

	/**
	 * Starts a service worker: the worker script runs `installSendOnce`, with the pages' sending
	 * options, on a scope whose listeners the model calls. Its store is its own connection to the
	 * pages' database, wrapped so that it dies with the worker.
	 */
	startWorker(): RunningWorker {
		const page = {dead: false};
		const listeners = new Map<string, (event: Event) => void>();
		const scope: ServiceWorkerScope = {
			addEventListener(type, listener) {
				listeners.set(type, listener);
			},
			// No page listens for its messages: pages hear outcomes over their BroadcastChannel.
			clients: {matchAll: async () => []},
		};
		workerStore.wrap = store => pageStore(store, page, this.failing, (value, old) => {
			this.wrote('worker', value, old);
			// It makes no key, but may store one as expired.
			this.learn(value, 'worker', undefined);
		});
		try {
			installSendOnce(scope, {
				fetch: pageFetch(page),
				timeout: 100,
				retry: {limit: 3, baseDelay: 5, maxDelay: 20, budget: false},
				// Every navigation sends (where Background Sync is missing): not once per 30 s.
				onNavigation: true,
				navigationInterval: 0,
				onEvent: event => {
					if (page.dead) return;
					this.trace('worker', event);
					if (event.type === 'settled' && event.outcome === 'succeeded') this.workers.delivered++;
					this.heard(event);
				},
			});
		} finally {
			workerStore.wrap = undefined;
		}

		this.workers.started++;
		return {
			page,
			fire(type, extra) {
				let kept: Promise<unknown> = Promise.resolve();
				listeners.get(type)?.(Object.assign(new Event(type), extra, {waitUntil(promise: Promise<unknown>) {
					kept = promise;
				}}));
				return kept;
			},
		};
	}

	/**
	 * The browser dispatches `trigger` to the worker: a new version activates (the worker before
	 * it dies, mid-flight or not), or the worker running now gets a sync, a message or a
	 * navigation (one is started if none runs, as the browser starts a stopped worker).
	 */
	wake(trigger: Trigger): void {
		if (trigger === 'activate') this.killWorker();
		const worker = this.worker ?? (this.worker = this.startWorker());
		const [type, extra] = {
			activate: ['activate', {}],
			sync: ['sync', {tag: SYNC_TAG}],
			message: ['message', {data: {type: SEND_TYPE}}],
			navigation: ['fetch', {request: {mode: 'navigate'}}],
		}[trigger] as [string, object];
		this.workers.events++;
		this.track(worker.fire(type, extra), worker.page);
	}

	/** The worker dies: nothing it started ever finishes, and its lease goes stale. */
	killWorker(): void {
		if (this.worker) this.worker.page.dead = true;
		this.worker = undefined;
	}

	/**
	 * A send of `intent` ended with `result`: the page's snapshot must say what the result says, and
	 * never `sending` once it is in (nothing sends it from this page then), unless its caller aborted.
	 */
	settled(intent: Intent, result: IntentResult, page: {dead: boolean}, signal: AbortSignal): void {
		// A caller that aborted ends its own wait only: the intent may still be sending (here or elsewhere).
		// A discarded intent is shown as none at all.
		if (page.dead || signal.aborted || intent.snapshot.discarded) return;
		const {state} = intent.snapshot;
		const agrees = result.status === 'unresolved' ? state === 'unresolved' || state === 'pending' || state === 'expired' : state === result.status;
		if (!agrees) this.disagreements.push(`${intent.key}: snapshot ${state}, result ${result.status}${result.status === 'unresolved' ? ` (${result.reason})` : ''}`);
	}

	/** What a counterexample printed says: the commands and, with SENDONCE_MODEL_TRACE, the trace. */
	story(): string {
		return this.log.join('\n');
	}

	/** Traces an event of `who` (a tab or the worker), with SENDONCE_MODEL_TRACE. */
	trace(who: string, event: SendOnceEvent): void {
		if (!TRACE || !('key' in event) || event.key === undefined) return;
		const info = this.keys.get(event.key);
		const detail = event.type === 'settled' ? ` ${event.outcome}${'reason' in event && event.reason ? ` (${event.reason})` : ''}` : event.type === 'attempt' ? ` #${event.attempt}` : '';
		this.log.push(`    ${who}: ${event.type}${detail} ${event.key.slice(0, 8)}${info ? ` ${info.scope}/${info.body}#${info.epoch}` : ''}`);
	}

	track(promise: Promise<unknown>, page: {dead: boolean}): void {
		const entry = {promise, page, done: false};
		promise.then(() => {
			entry.done = true;
		}, () => {
			entry.done = true;
		});
		this.pending.push(entry);
	}

	/**
	 * Registers a key the user was given for (scope, body). A new key beside an open one of the
	 * scope for another body means the scope table replaced that one as never sent, or as settled
	 * (a refused first attempt, a delivery) where the server saw it.
	 */
	saw(key: string, scope: Scope, body: Body, expiresAt: number, by: string): void {
		if (this.keys.has(key)) return;
		const seen = new Set(sentKeys());
		for (const [other, info] of this.keys) {
			if (info.status !== 'open' || info.scope !== scope) continue;
			// Expired (the SDK's own test: stored as expired, or now >= expiresAt) and never sent,
			// it is replaced even by the same body: a new action.
			const expiredUnsent = info.body === body && (info.expired === true || Date.now() >= info.expiresAt) && !seen.has(other);
			if (info.body !== body || expiredUnsent) {
				info.status = 'dropped';
				// One the server has seen can only be replaced once settled (its first attempt refused,
				// or delivered), in a page that has not said so yet: its outcome is taken when it does.
				if (seen.has(other)) {
					info.settling = true;
					if (TRACE) this.log.push(`    ${other.slice(0, 8)} replaced once sent`);
					continue;
				}

				if (TRACE) this.log.push(`    ${other.slice(0, 8)} replaced as never sent`);
				info.neverSent = true;
				if (expiredUnsent) this.endAction(scope, body);
			}
		}

		this.keys.set(key, {scope, body, epoch: this.epoch(scope, body), status: 'open', expiresAt});
		if (TRACE) this.log.push(`    ${by}: made ${key.slice(0, 8)} ${scope}/${body}#${this.epoch(scope, body)}`);
	}

	/** With SENDONCE_MODEL_TRACE=writes, traces a record `who` wrote over `old`, or deleted. */
	wrote(who: string, value: unknown, old: unknown): void {
		if (!TRACE_WRITES) return;
		type Stored = {key?: string; state?: string; attempts?: number; lease?: {owner: string; until: number}} | undefined;
		const record = (value ?? old) as Stored;
		if (typeof record?.key !== 'string') return;
		const {lease} = record;
		this.log.push(value === undefined
			? `    ${who}: deletes ${record.key.slice(0, 8)}`
			: `    ${who}: writes ${record.key.slice(0, 8)} ${record.state} ${record.attempts}${lease ? `, lease ${lease.owner.slice(0, 4)} for ${lease.until - Date.now()} ms` : ''}`);
	}

	/**
	 * A record a page (`tab`) or the worker wrote: a key a page made for the (scope, body) its
	 * request carries, or one stored as expired. Written by an `intent(…, {replace: true})`, it
	 * replaces, by the user's choice, whatever the scope held, even a press that was still being
	 * written when the user chose.
	 */
	learn(value: unknown, who: string, tab: Tab | undefined): void {
		const record = value as {key?: unknown; state?: string; expiresAt?: number; request?: {body?: unknown}} | undefined;
		if (typeof record?.key !== 'string' || typeof record.request?.body !== 'string') return;
		const known = this.keys.get(record.key);
		// Stored as expired (past its window, or made by a clock that ran fast): never sent, a new press replaces it.
		if (known && record.state === 'expired') known.expired = true;
		// The worker makes no key: one it wrote that no page made is left for check() to find.
		if (known || !tab) return;
		const [run, scope, body] = (JSON.parse(record.request.body) as {order: string}).order.split('/') as [string, Scope, Body];
		if (Number(run) !== this.run) return;
		if (tab?.replacing === scope) this.drop(info => info.scope === scope);
		this.saw(record.key, scope, body, record.expiresAt ?? Date.now() + WINDOW_MS, who);
	}

	/** Lets every chain of promises that is under way finish its current step. */
	async quiesce(): Promise<void> {
		for (let index = 0; index < 3; index++) await new Promise<void>(resolve => setImmediate(resolve));
	}

	async check(): Promise<void> {
		await this.quiesce();
		// No action carried out under two keys.
		const byAction = new Map<string, Set<string>>();
		for (const key of worked) {
			if (key === undefined) continue;
			const info = this.keys.get(key);
			expect(info, `the server worked under a key no page was given: ${key}\n${this.story()}`).toBeDefined();
			const action = `${info!.scope}/${info!.body}#${info!.epoch}`;
			const keys = byAction.get(action) ?? new Set();
			keys.add(key);
			byAction.set(action, keys);
		}

		for (const [action, keys] of byAction) {
			expect(keys.size, `action ${action} was carried out under ${keys.size} keys\n${this.story()}`).toBeLessThanOrEqual(1);
		}

		// What the scope table replaced as never sent never reaches the server; what a check said was not sent never runs.
		for (const [key, info] of this.keys) {
			if (info.neverSent) expect(sentKeys().includes(key), `${key} was replaced as never sent, and was sent\n${this.story()}`).toBe(false);
			if (info.status === 'not-sent') expect(worked.includes(key), `${key} was settled not-sent, and the server did its work\n${this.story()}`).toBe(false);
		}

		expect(this.disagreements, `a snapshot disagreed with its send's result\n${this.story()}`).toEqual([]);

		// No unsettled intent lost.
		const stored = JSON.stringify(await this.shared.list());
		for (const [key, info] of this.keys) {
			if (info.status !== 'open') continue;
			expect(stored.includes(key), `the open intent ${key} (${info.scope}/${info.body}) is in no store\n${this.story()}`).toBe(true);
		}
	}
}

type Command = fc.AsyncCommand<World, World>;

function command(name: string, run: (world: World) => Promise<void>): Command {
	return {
		check: () => true,
		async run(_model, world) {
			world.log.push(name);
			world.commands++;
			await run(world);
			await world.check();
		},
		toString: () => name,
	};
}

const slot = fc.integer({min: 0, max: 2});
const scope = fc.constantFrom(...SCOPES);
const body = fc.constantFrom(...BODIES);
const trigger = fc.constantFrom<Trigger>('activate', 'sync', 'message', 'navigation');
const fault: fc.Arbitrary<Fault> = fc.oneof(
	fc.constant({type: 'lose-reply'} as const),
	fc.constant({type: 'error-after', status: 502} as const),
	fc.constant({type: 'error-before', status: 503} as const),
	fc.constant({type: 'error-before', status: 401} as const),
	fc.constant({type: 'drop-before'} as const),
	fc.record({type: fc.constant('slow' as const), ms: fc.integer({min: 20, max: 150})}),
);

const intentCommand = fc.tuple(slot, scope, body, fc.boolean()).map(([at, where, what, replace]) => command(`tab ${at}: intent(${where}, ${what}${replace ? ', replace' : ''})`, async world => {
		const tab = world.tabs[at] ?? world.open(at);
		if (replace) world.drop(info => info.scope === where);
		tab.replacing = replace ? where : undefined;
		try {
			const intent = await tab.client.intent(where, world.request(where, what), {replace});
			world.saw(intent.key, where, what, intent.expiresAt, `tab ${at}`);
			tab.held.set(where, intent);
		} catch {
			// UnresolvedIntentError (another body may have been sent) or a failing store.
		} finally {
			tab.replacing = undefined;
		}
	}));
const sendCommand = fc.tuple(slot, scope).map(([at, where]) => command(`tab ${at}: send(${where})`, async world => {
		const tab = world.tabs[at];
		const intent = tab?.held.get(where);
		if (!tab || !intent) return;
		const controller = new AbortController();
		tab.controllers.set(where, controller);
		world.track(intent.send({signal: controller.signal}).then(result => world.settled(intent, result, tab.page, controller.signal)), tab.page);
	}));

/**
 * What a form does on Send, not awaited: `client.send()` (one write before the first attempt),
 * or `intent()` then its `send()`.
 */
const pressCommand = fc.tuple(slot, scope, body, fc.boolean()).map(([at, where, what, oneCall]) => command(`tab ${at}: press(${where}, ${what})${oneCall ? ' with client.send' : ''}`, async world => {
	const tab = world.tabs[at] ?? world.open(at);
	const controller = new AbortController();
	tab.controllers.set(where, controller);
	if (oneCall) {
		world.track(tab.client.send(where, world.request(where, what), {signal: controller.signal}), tab.page);
		return;
	}

	try {
		const intent = await tab.client.intent(where, world.request(where, what));
		tab.held.set(where, intent);
		world.track(intent.send({signal: controller.signal}).then(result => world.settled(intent, result, tab.page, controller.signal)), tab.page);
	} catch {
		// As intent().
	}
}));

/**
 * "Check whether it arrived", at once (often while the intent is still sent somewhere), or once
 * what the tab is sending has stopped, as a user presses it beside Retry.
 */
const checkCommand = fc.tuple(slot, scope, fc.boolean()).map(([at, where, later]) => command(`tab ${at}: check(${where})${later ? ' once its sends stop' : ''}`, async world => {
	const tab = world.tabs[at];
	const intent = tab?.held.get(where);
	if (!tab || !intent) return;
	if (later) {
		const open = world.pending.filter(entry => entry.page === tab.page && !entry.done).map(async entry => entry.promise);
		await Promise.race([Promise.allSettled(open), new Promise(resolve => setTimeout(resolve, 2000))]);
	}

	world.track(intent.check().catch(() => undefined), tab.page);
}));

/**
 * A story the random commands rarely tell: a press whose every attempt is lost before the server
 * (while the other tabs and the worker go on), then "Check whether it arrived" once it stops.
 */
const lostThenCheckCommand = fc.tuple(slot, scope, body).map(([at, where, what]) => command(`tab ${at}: press(${where}, ${what}), every attempt lost on the way, then check`, async world => {
	const tab = world.tabs[at] ?? world.open(at);
	const lost: Fault[] = [{type: 'drop-before'}, {type: 'drop-before'}, {type: 'drop-before'}];
	server.faults.push(...lost);
	try {
		const intent = await tab.client.intent(where, world.request(where, what));
		tab.held.set(where, intent);
		const controller = new AbortController();
		tab.controllers.set(where, controller);
		const sending = intent.send({signal: controller.signal}).then(result => world.settled(intent, result, tab.page, controller.signal));
		world.track(sending, tab.page);
		await Promise.race([sending, new Promise(resolve => setTimeout(resolve, 2000))]);
		world.track(intent.check().catch(() => undefined), tab.page);
	} catch {
		// As intent().
	} finally {
		// The faults no request met are taken back: they were this story's.
		for (const one of lost) if (server.faults.includes(one)) server.faults.splice(server.faults.indexOf(one), 1);
	}
}));

const workerCommand = trigger.map(what => command(`worker: ${what}`, async world => {
	world.wake(what);
}));

// Pressing and sending come up most often, as they do in use.
const commands: Array<fc.Arbitrary<Command>> = [
	pressCommand,
	pressCommand,
	pressCommand,
	intentCommand,
	sendCommand,
	sendCommand,
	// "Check whether it arrived": asks the server, often while the intent is still being sent somewhere.
	checkCommand,
	checkCommand,
	lostThenCheckCommand,
	fc.tuple(slot, scope).map(([at, where]) => command(`tab ${at}: abort(${where})`, async world => {
		world.tabs[at]?.controllers.get(where)?.abort();
	})),
	fc.tuple(slot, scope).map(([at, where]) => command(`tab ${at}: discard(${where})`, async world => {
		const tab = world.tabs[at];
		const intent = tab?.held.get(where);
		if (!tab || !intent) return;
		world.drop(info => info.scope === where && world.keys.get(intent.key) === info);
		tab.held.delete(where);
		await intent.discard().catch(() => undefined);
	})),
	slot.map(at => command(`tab ${at}: resume()`, async world => {
		const tab = world.tabs[at] ?? world.open(at);
		world.track(tab.client.list().then(intents => {
			for (const intent of intents) {
				const order = intent.scope as Scope;
				const known = world.keys.get(intent.key);
				if (known) tab.held.set(order, intent);
			}

			return tab.client.resume();
		}), tab.page);
	})),
	slot.map(at => command(`tab ${at}: clear()`, async world => {
		const tab = world.tabs[at];
		if (!tab) return;
		world.drop(() => true);
		tab.held.clear();
		await tab.client.clear().catch(() => undefined);
	})),
	slot.map(at => command(`tab ${at}: reload`, async world => {
		const tab = world.tabs[at];
		if (tab) tab.page.dead = true;
		world.open(at);
	})),
	fc.constantFrom(11_000, -3_600_000, 25 * 3_600_000).map(ms => command(`clock ${ms > 0 ? '+' : ''}${ms} ms`, async () => {
		vi.setSystemTime(Date.now() + ms);
	})),
	slot.map(at => command(`tab ${at}: headers() fails next`, async world => {
		const tab = world.tabs[at];
		if (tab) tab.failHeaders = true;
	})),
	fc.tuple(slot, fc.boolean()).map(([at, offline]) => command(`tab ${at}: ${offline ? 'offline' : 'online'}`, async world => {
		const tab = world.tabs[at];
		if (tab) tab.offline = offline;
	})),
	fc.boolean().map(on => command(`store ${on ? 'fails' : 'works'}`, async world => {
		world.failing.on = on;
	})),
	// The service worker: woken by an event (a sync, a page's message, a navigation, a new
	// version's activation) it sends the stored intents, often while pages send them too; or it dies.
	workerCommand,
	workerCommand,
	workerCommand,
	fc.constant(command('worker dies', async world => {
		world.killWorker();
	})),
	fault.map(next => command(`fault ${JSON.stringify(next)}`, async () => {
		server.faults.push(next);
	})),
	// The network down for a while before the server: a send runs out of attempts that never arrived.
	fc.constant(command('faults: 6 × drop-before', async () => {
		for (let index = 0; index < 6; index++) server.faults.push({type: 'drop-before'});
	})),
	fc.integer({min: 1, max: 40}).map(ms => command(`wait ${ms} ms`, async world => {
		const open = world.pending.filter(entry => !entry.done).map(async entry => entry.promise);
		await Promise.race([Promise.allSettled(open), new Promise(resolve => setTimeout(resolve, ms))]);
	})),
];

let run = 0;
const counts = {runs: 0, commands: 0, sends: 0, effects: 0, workers: 0, workerEvents: 0, delivered: 0, checked: new Map<string, number>(), asked: 0};

test(`${RUNS} runs of random tabs, a service worker, reloads, clocks, store failures and faults: never two keys for one action, nothing lost, every send settles`, async () => {
	await fc.assert(fc.asyncProperty(fc.commands(commands, {maxCommands: 40, size: '+1', ...(process.env.SENDONCE_MODEL_REPLAY ? {replayPath: process.env.SENDONCE_MODEL_REPLAY} : {})}), async cmds => {
		// A database of its own: nothing an earlier run's dead pages or workers left is found.
		vi.stubGlobal('indexedDB', new IDBFactory());
		const world = new World(++run);
		server.reset();
		worked.length = 0;
		vi.useFakeTimers({toFake: ['Date'], now: Date.now()});
		try {
			await fc.asyncModelRun(() => ({model: world, real: world}), cmds);

			// Faults stop, the store works again, every page is online, crashed pages' and workers' leases go stale.
			server.faults.length = 0;
			world.failing.on = false;
			for (const tab of world.tabs) if (tab) tab.offline = false;
			vi.setSystemTime(Date.now() + 11_000);
			const living = world.pending.filter(entry => !entry.page.dead);
			const settled = await Promise.race([
				Promise.allSettled(living.map(async entry => entry.promise)).then(() => true),
				new Promise<false>(resolve => setTimeout(() => resolve(false), 10_000)),
			]);
			expect(settled, `a send() or a worker event never settled\n${world.story()}`).toBe(true);
			await expect.poll(() => server.inFlight).toBe(0);
			await world.check();
			for (const [key, info] of world.keys) {
				const done = worked.filter(worker => worker === key).length;
				if (info.status === 'failed' || info.status === 'not-sent') expect(done, `${key} ${info.status} after the server did the work\n${world.story()}`).toBe(0);
				if (info.status === 'succeeded') expect(done, `${key} succeeded ${done} times\n${world.story()}`).toBe(1);
			}

			counts.runs++;
			counts.commands += world.commands;
			counts.sends += world.pending.length;
			counts.effects += worked.length;
			counts.workers += world.workers.started;
			counts.workerEvents += world.workers.events;
			counts.delivered += world.workers.delivered;
			for (const [outcome, count] of world.checked) counts.checked.set(outcome, (counts.checked.get(outcome) ?? 0) + count);
			counts.asked += server.requests.filter(request => request.headers['idempotency-check'] !== undefined).length;
		} finally {
			vi.useRealTimers();
			for (const tab of world.tabs) if (tab) tab.page.dead = true;
			world.killWorker();
			vi.unstubAllGlobals();
		}
	}), {numRuns: RUNS, ...(process.env.SENDONCE_MODEL_SEED ? {seed: Number(process.env.SENDONCE_MODEL_SEED), path: process.env.SENDONCE_MODEL_PATH, endOnFailure: true} : {})});

	console.log(`model: ${counts.runs} runs, ${counts.commands} commands, ${counts.sends} sends, resumes and worker events, ${counts.effects} effects; ${counts.workers} workers started, ${counts.workerEvents} worker events, ${counts.delivered} intents the worker delivered; ${counts.asked} checks reached the server; checks found ${[...counts.checked].map(([outcome, count]) => `${outcome} ${count}`).join(', ') || 'nothing'}; no counterexample`);
}, 60_000 + (RUNS * 15_000));
