import {INDETERMINATE_STATUSES} from '../core/classify.js';
import {createClient} from '../stores/client.js';
import {parseRecord} from '../core/record.js';
import {isSendable} from '../core/state.js';
import {indexedDbStore} from '../stores/indexeddb.js';
import type {ClientOptions, IntentResult, SendOnceEvent} from '../core/types.js';
import {keepDelivered} from './delivered.js';
import {MESSAGE_TYPE, SEND_TYPE, SYNC_TAG} from './names.js';

/** An event a service worker may keep itself alive for. */
interface ExtendableEventLike {
	waitUntil(promise: Promise<unknown>): void;
}

/**
 * What `installSendOnce` needs of the service worker's global scope (`self`): a structural
 * subset of `ServiceWorkerGlobalScope`, so that no `webworker` lib is needed to call it.
 */
export interface ServiceWorkerScope {
	addEventListener(type: string, listener: (event: Event) => void): void;
	readonly clients: {
		matchAll(options?: {type?: 'window' | 'all'; includeUncontrolled?: boolean}): Promise<ReadonlyArray<{postMessage(message: unknown): void}>>;
	};
	/** Where the browser has Background Sync: the worker's own registration. */
	readonly registration?: {readonly sync?: {register(tag: string): Promise<void>}};
}

/**
 * Options of {@link installSendOnce}. The sending options must match the pages' client
 * (`headerName`, `keyFormat`, `classify`); `retry` and `timeout` may differ.
 *
 * @example
 * import {installSendOnce, type InstallOptions} from 'sendonce/sw';
 *
 * const options: InstallOptions = {headers: async () => ({authorization: `Bearer ${await readToken()}`})};
 */
export interface InstallOptions extends Pick<ClientOptions, 'fetch' | 'headerName' | 'keyFormat' | 'retry' | 'timeout' | 'classify'> {
	/**
	 * Headers for every attempt the worker makes (a bearer token): the page's `headers` option
	 * is never stored, so the worker cannot see it. Cookies are sent without it.
	 * @default {}
	 * @example
	 * import {installSendOnce} from 'sendonce/sw';
	 *
	 * installSendOnce(self, {headers: async () => ({authorization: `Bearer ${await readToken()}`})});
	 */
	headers?: ClientOptions['headers'];
	/**
	 * Also send the stored intents when the worker handles a navigation of its origin, at most
	 * once per `navigationInterval`: the fallback where Background Sync is missing.
	 * @default true where `SyncManager` is missing (Safari, Firefox, Android WebView), else false
	 */
	onNavigation?: boolean;
	/**
	 * The least time between two sends started by navigations, in milliseconds.
	 * @default 30_000
	 */
	navigationInterval?: number;
	/**
	 * Receives every event of the worker's client; each `settled` one is also posted to the
	 * open pages.
	 * @default undefined
	 */
	onEvent?: (event: SendOnceEvent) => void;
}

/**
 * What the worker posts to every open page (`navigator.serviceWorker`'s `message` event) when
 * it settles an intent. Pages' clients hear the outcome over their BroadcastChannel anyway.
 *
 * @example
 * import type {WorkerMessage} from 'sendonce/sw';
 *
 * navigator.serviceWorker.addEventListener('message', ({data}: MessageEvent<WorkerMessage>) => {
 * 	if (data?.type === 'sendonce:settled' && data.event.outcome === 'succeeded') console.log('sent', data.event.scope);
 * });
 */
export interface WorkerMessage {
	type: typeof MESSAGE_TYPE;
	event: Extract<SendOnceEvent, {type: 'settled'}>;
}

/** What {@link installSendOnce} returns. */
export interface InstalledSendOnce {
	/** Sends every stored `pending` or `sending` intent inside its window now (what the events do). */
	send(): Promise<IntentResult[]>;
}

/** How long activation waits for the stored intents to be sent, before the worker takes requests. */
const ACTIVATE_WAIT_MS = 5000;
const DEFAULT_NAVIGATION_INTERVAL = 30_000;
/** How many times one event lists the store again for intents stored while it sent. */
const MAX_PASSES = 4;

/**
 * A refusal the worker meets may be its own lack of what the page would have sent (a session,
 * a CSRF header, a token): the user's action is then the page's to retry or give up, never
 * failed behind the user's back. 409 and the statuses sendonce retries stay as they are.
 */
function refusedInWorker(status: number): boolean {
	return status >= 400 && status < 500 && status !== 409 && !INDETERMINATE_STATUSES.has(status);
}

/**
 * Makes the service worker send the intents the pages stored and could not finish (a closed
 * tab): on a Background Sync (tag `sendonce`), when it activates, on a `{type: 'sendonce:send'}`
 * message, and, where Background Sync is missing, when it handles a navigation. Each intent is
 * claimed with the Web Lock the pages use, sent with its stored key and bytes, and settled by
 * the same rules; `unresolved` and `expired` intents are never sent. Call it once, at the top
 * level of the worker script.
 *
 * @example
 * import {installSendOnce} from 'sendonce/sw';
 *
 * installSendOnce(self);
 */
export function installSendOnce(scope: ServiceWorkerScope, options: InstallOptions = {}): InstalledSendOnce {
	const {onNavigation = typeof (globalThis as {SyncManager?: unknown}).SyncManager === 'undefined', navigationInterval = DEFAULT_NAVIGATION_INTERVAL, onEvent, ...sending} = options;
	if (typeof navigationInterval !== 'number' || !(navigationInterval >= 0)) {
		throw new TypeError(process.env.NODE_ENV !== 'production' ? `Expected \`navigationInterval\` to be a number of milliseconds ≥ 0, got ${String(navigationInterval)}` : 'Invalid `navigationInterval`');
	}

	const tellPages = async (event: Extract<SendOnceEvent, {type: 'settled'}>) => {
		const pages = await scope.clients.matchAll({type: 'window', includeUncontrolled: true});
		for (const page of pages) page.postMessage({type: MESSAGE_TYPE, event} satisfies WorkerMessage);
	};

	// Made now, so that bad options throw at install; the database is opened on first use.
	const notes = keepDelivered(indexedDbStore());
	const {classify} = sending;
	const client = createClient({
		...sending,
		classify: (response, data) => classify?.(response, data) ?? (refusedInWorker(response.status) ? 'unresolved' : undefined),
		store: notes.store,
		onEvent(event) {
			if (event.type === 'settled') {
				if (event.outcome === 'succeeded') notes.delivered(event.key, event.scope);
				void tellPages(event).catch(() => undefined);
			}

			onEvent?.(event);
		},
	});
	let lastNavigation = Number.NEGATIVE_INFINITY;

	const requestSync = () => {
		void scope.registration?.sync?.register(SYNC_TAG).catch(() => undefined);
	};

	/** The keys of the stored intents a resume would send now. */
	const sendable = async () => {
		const now = Date.now();
		return new Set((await notes.store.list()).flatMap(([, value]) => {
			const parsed = parseRecord(value);
			return 'record' in parsed && isSendable(parsed.record, now) ? [parsed.record.key] : [];
		}));
	};

	// Every event is one shot: it covers every intent stored when it fired, those already being
	// sent included (their retry waits too), and every one stored while it runs.
	const send = async (): Promise<IntentResult[]> => {
		const results: IntentResult[] = [];
		let known = await sendable();
		for (let pass = 1; ; pass++) {
			results.push(...await client.resume());
			const now = await sendable();
			if (![...now].some(key => !known.has(key))) break;
			if (pass >= MAX_PASSES) {
				// A page still making intents sends them itself; a Background Sync, or the next
				// trigger, covers what it leaves.
				requestSync();
				break;
			}

			known = new Set([...known, ...now]);
		}

		await notes.written();
		return results;
	};

	const keepAlive = (event: ExtendableEventLike, work: Promise<unknown>) => {
		event.waitUntil(work.catch((error: unknown) => {
			onEvent?.({type: 'store-error', error});
		}));
	};

	scope.addEventListener('sync', event => {
		if ((event as Event & {tag?: string}).tag === SYNC_TAG) keepAlive(event as Event & ExtendableEventLike, send());
	});
	scope.addEventListener('activate', event => {
		// Requests wait for activation: they wait for the sending only so long. What is still being
		// sent then (a retry wait) is handed to a Background Sync, whose event holds the worker until
		// it ends; without one, the next message, navigation or activation sends it.
		let done = false;
		const sent = send().finally(() => {
			done = true;
		});
		keepAlive(event as Event & ExtendableEventLike, Promise.race([sent, new Promise<void>(resolve => {
			setTimeout(() => {
				if (!done) requestSync();
				resolve();
			}, ACTIVATE_WAIT_MS);
		})]));
		sent.catch(() => undefined);
	});
	scope.addEventListener('message', event => {
		if ((event as MessageEvent<{type?: string} | undefined>).data?.type === SEND_TYPE) keepAlive(event as Event & ExtendableEventLike, send());
	});
	if (onNavigation) {
		scope.addEventListener('fetch', event => {
			const {request} = event as Event & {request: Request};
			if (request.mode !== 'navigate' || Date.now() - lastNavigation < navigationInterval) return;
			lastNavigation = Date.now();
			// No `respondWith`: the page loads as it would without the worker.
			keepAlive(event as Event & ExtendableEventLike, send());
		});
	}

	return {send};
}
