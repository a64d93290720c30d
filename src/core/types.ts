import type {StandardSchemaV1} from './standard-schema.js';

/**
 * The methods an intent may use. GET and HEAD are safe to repeat and need no intent.
 *
 * @example
 * import type {IntentMethod} from 'sendonce';
 *
 * const method: IntentMethod = 'PUT';
 */
export type IntentMethod = 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/**
 * One user action as an HTTP request. The body is serialised once, when the intent is
 * created; every attempt sends those exact bytes.
 *
 * @example
 * import {createClient} from 'sendonce';
 *
 * const client = createClient();
 * const intent = await client.intent('contact-form', {
 * 	url: '/api/contact',
 * 	json: {name: 'Ada', message: 'Hello'},
 * });
 */
export interface IntentRequest<Data = unknown> {
	/** Absolute URL, or a path resolved against the page's location. */
	url: string;
	/**
	 * @default 'POST'
	 */
	method?: IntentMethod;
	/** A JSON value, serialised with sorted object keys. Mutually exclusive with `body`. */
	json?: unknown;
	/** A text or form-encoded body. Mutually exclusive with `json`. */
	body?: string | URLSearchParams;
	/**
	 * Request headers: an object, a `Headers` instance or `[name, value]` pairs, as `fetch`
	 * takes them. Only `content-type`, `accept` and the client's `persistHeaders` are stored;
	 * the others are sent only from the page that created the intent. Put secrets in the
	 * client's `headers` option instead, which supplies them at every attempt.
	 */
	headers?: Record<string, string> | Headers | Array<[string, string]>;
	/**
	 * A Standard Schema validator (zod 4, valibot, arktype) for the success body: `result.data` is
	 * typed and validated. A body that fails it leaves the intent succeeded (the server did the
	 * work) with the validator's `issues` on the result. Like the `headers` not stored, it is not
	 * stored: an intent sent again after a reload is not validated.
	 */
	schema?: StandardSchemaV1<unknown, Data>;
}

/**
 * Where an intent is in its life. See `src/core/state.ts` for the transitions.
 *
 * @example
 * import type {IntentState} from 'sendonce';
 *
 * const mayHaveBeenSentCopy = (state: IntentState) => state === 'unresolved' || state === 'expired';
 */
export type IntentState = 'pending' | 'sending' | 'succeeded' | 'failed' | 'unresolved' | 'expired' | 'not-sent';

/**
 * Why an intent stopped without a known outcome:
 * - `exhausted`: every attempt allowed ended without an answer that settles it;
 * - `aborted`: the caller's signal, `discard()`, or an error stopped the send;
 * - `replayed-error`: the server replayed a stored 5xx;
 * - `budget`: the client-wide retry budget ran out;
 * - `refused`: a 4xx came back after an earlier attempt may have reached the server (an
 *   expired token, a proxy): the work may have been done, so the key is kept for `send()` again;
 * - `transport`: the answer could not be read (an opaque `no-cors` response, status 0), so
 *   it is not retried: the browser may also have stripped the key;
 * - `redirected`: the request was redirected (a login page, a captive portal) and `classify`
 *   did not decide.
 *
 * @example
 * import type {UnresolvedReason} from 'sendonce';
 *
 * const explain = (reason: UnresolvedReason) => (reason === 'refused' ? 'Sign in again, then retry.' : 'The connection failed.');
 */
export type UnresolvedReason = 'exhausted' | 'aborted' | 'replayed-error' | 'budget' | 'refused' | 'transport' | 'redirected';

/**
 * The parts of an HTTP response that are safe to keep: a plain object.
 *
 * @example
 * import type {ResponseInfo} from 'sendonce';
 *
 * const requestId = (response: ResponseInfo) => response.headers['x-request-id'];
 */
export interface ResponseInfo {
	status: number;
	/** Lower-cased header names. */
	headers: Record<string, string>;
	/** The transport followed a redirect to get this answer (`Response.redirected`). */
	redirected?: boolean;
	/** The URL that answered, after any redirect (`Response.url`; empty when the transport does not say). */
	url?: string;
}

/**
 * The outcome of `intent.send()`. Every network outcome is a result, never a rejection.
 *
 * @example
 * import type {IntentResult} from 'sendonce';
 *
 * function toast(result: IntentResult): string {
 * 	if (result.status === 'succeeded') return result.replayed ? 'Already sent.' : 'Sent.';
 * 	if (result.status === 'failed') return 'Not sent: the server refused it.';
 * 	return 'Your message may have been sent.';
 * }
 */
export type IntentResult<Data = unknown> =
	| {
		status: 'succeeded';
		key: string;
		response: ResponseInfo;
		/**
		 * The parsed JSON body, or text (any textual type, or none), or an `ArrayBuffer` of the bytes
		 * (any other type: an image, a PDF), or `undefined` for an empty body; validated by the
		 * request's `schema`.
		 */
		data: Data;
		/** Where the body failed the request's `schema`: what the validator said (`data` is then the body as it came). */
		issues?: readonly StandardSchemaV1.Issue[];
		/** The server answered with its stored response (`Idempotent-Replayed: true`). */
		replayed: boolean;
		attempts: number;
	}
	| {
		/** A definitive 4xx: the server refused, nothing happened. */
		status: 'failed';
		key: string;
		response: ResponseInfo;
		data: unknown;
		attempts: number;
	}
	| {
		status: 'unresolved';
		key: string;
		reason: UnresolvedReason;
		/** The last network error or timeout, when the last attempt ended with one. */
		error: unknown;
		/** The last answer, when the last attempt got one. */
		response?: ResponseInfo;
		/** The last answer's parsed body, when the last attempt got one (`'refused'`: the server's reason). */
		data?: unknown;
		attempts: number;
		mayHaveBeenSent: boolean;
	}
	| {
		/** Past the intent's window: never sent again. Reconcile (`intent.check()`), then `discard()`. */
		status: 'expired';
		key: string;
		attempts: number;
		mayHaveBeenSent: boolean;
	}
	| {
		/**
		 * `intent.check()` found that the server never ran it, and the server closed its key: nothing
		 * happened, and nothing sent with this key ever will. Send it again as a new intent.
		 */
		status: 'not-sent';
		key: string;
		/** The answer that said so: a check's, or the 410 a request with the closed key got. */
		response: ResponseInfo;
		attempts: number;
	};

/**
 * Why `intent.check()` could not settle an intent:
 * - `released`: the server ran it and kept no answer (the handler threw, answered 5xx or died):
 *   it may have happened; `send()` asks again with the same key;
 * - `forgotten`: the server does not know the key (forgotten after its `ttl`, lost on a restart)
 *   or cannot prove it never ran;
 * - `not-offered`: the server never said it answers checks (an `Idempotency-TTL` header), or
 *   the key is past the `ttl` it gave: nothing was asked;
 * - `no-answer`: the check itself got no readable answer (offline, a timeout, a 5xx).
 *
 * @example
 * import type {CheckUnknownReason} from 'sendonce';
 *
 * const hint = (reason: CheckUnknownReason) => (reason === 'no-answer' ? 'Try again when you are online.' : 'Retry, or contact us.');
 */
export type CheckUnknownReason = 'released' | 'forgotten' | 'not-offered' | 'no-answer';

/**
 * What `intent.check()` found. Settled (`succeeded` with the server's stored answer, `failed`, or
 * `not-sent`), the intent is settled the same way, in every tab; `running` and `unknown` change
 * nothing: the intent may still have been sent.
 *
 * @example
 * import type {CheckResult} from 'sendonce';
 *
 * function say(check: CheckResult): string {
 * 	if (check.status === 'succeeded') return 'It arrived.';
 * 	if (check.status === 'not-sent') return 'It never arrived: send it now.';
 * 	if (check.status === 'running') return 'The server is still working on it.';
 * 	return check.status === 'failed' ? 'The server refused it.' : 'We cannot tell yet.';
 * }
 */
export type CheckResult<Data = unknown> =
	| Extract<IntentResult<Data>, {status: 'succeeded' | 'failed' | 'not-sent'}>
	| {
		/** The first request still holds the key on the server, or this page or another tab is sending it. */
		status: 'running';
		key: string;
		/** Milliseconds the server asked to wait before asking again, when it said. */
		retryAfter?: number;
	}
	| {status: 'unknown'; key: string; reason: CheckUnknownReason};

/**
 * The request an intent sends, as it is stored with it: what a form shows again after a reload,
 * and what Retry sends. Frozen plain data. Headers are left out: only some were stored.
 *
 * @example
 * import type {StoredRequest} from 'sendonce';
 *
 * // After a reload, the form shows the text that may have been sent.
 * const message = (request: StoredRequest) => (request.json as {message?: string} | undefined)?.message ?? '';
 */
export interface StoredRequest {
	/** The URL, resolved against the page when it was relative. */
	readonly url: string;
	readonly method: IntentMethod;
	/**
	 * The body, parsed, where it is JSON that gives back the very bytes sent (sendonce writes `json`
	 * so, object keys sorted). Frozen: copy it before editing it.
	 */
	readonly json?: unknown;
	/** Any other body, as the text that is sent (a `URLSearchParams` as its form-encoded text). */
	readonly body?: string;
	/** The stored `content-type`, so that sending this request again labels the body as it was. */
	readonly headers?: Readonly<{'content-type': string}>;
}

/**
 * An immutable picture of an intent, handed to `subscribe` listeners.
 *
 * @example
 * import type {IntentSnapshot} from 'sendonce';
 *
 * const label = (snapshot: IntentSnapshot) => `${snapshot.state}, attempt ${snapshot.attempts}`;
 * intent.subscribe(snapshot => render(label(snapshot)));
 */
export interface IntentSnapshot {
	readonly key: string;
	readonly scope: string;
	readonly state: IntentState;
	/** Attempts sent so far, all sessions together. */
	readonly attempts: number;
	readonly createdAt: number;
	readonly expiresAt: number;
	/** An attempt started and the server did not refuse it: the action may have happened. */
	readonly mayHaveBeenSent: boolean;
	/**
	 * The last result of `send()` in this page, if any; for an intent found `unresolved` in the
	 * store, the outcome stored with it (the reason, the last answer's status, the last error's name).
	 */
	readonly result: IntentResult | undefined;
	/** `discard()` was called: the intent is forgotten and cannot be sent. */
	readonly discarded: boolean;
	/** The request as stored: URL, method and body, the same after a reload. */
	readonly request: StoredRequest;
}

/**
 * What `onEvent` receives. Keys appear in events; request bodies never do.
 *
 * @example
 * import {createClient, type SendOnceEvent} from 'sendonce';
 *
 * const client = createClient({
 * 	onEvent(event: SendOnceEvent) {
 * 		if (event.type === 'store-degraded') console.warn(`sendonce stores intents in ${event.store}`);
 * 	},
 * });
 */
export type SendOnceEvent =
	| {type: 'attempt'; key: string; scope: string; attempt: number}
	| {
		type: 'retry';
		key: string;
		scope: string;
		/** The attempt that just ended. */
		attempt: number;
		/** Milliseconds until the next attempt. */
		delay: number;
		status?: number;
		error?: unknown;
	}
	| {type: 'wait-online'; key: string; scope: string; attempt: number}
	| {
		type: 'settled';
		key: string;
		scope: string;
		attempt: number;
		outcome: IntentResult['status'];
		reason?: UnresolvedReason;
		status?: number;
	}
	/** `intent.check()` asked the server (or found nothing to ask): what it found. */
	| {type: 'checked'; key: string; scope: string; outcome: CheckResult['status']; reason?: CheckUnknownReason}
	| {
		type: 'store-degraded';
		/** The store that was chosen instead of IndexedDB. */
		store: 'session' | 'memory';
		/** Why the better stores could not be used. */
		error: unknown;
	}
	| {type: 'store-error'; key?: string; scope?: string; error: unknown}
	| {
		/**
		 * A cross-origin answer did not show a header sendonce reads (once per origin and
		 * header): the server does not send it, or does not list it in
		 * `Access-Control-Expose-Headers`. Without `Retry-After` the backoff paces retries;
		 * without `Idempotent-Replayed` a replay reads as `replayed: false`. Nothing is sent twice.
		 */
		type: 'cors-headers-hidden';
		key: string;
		scope: string;
		origin: string;
		header: 'retry-after' | 'idempotent-replayed';
		status: number;
	};

/**
 * The answer a `classify` hook may give; `undefined` falls through to the built-in chain.
 * `'unresolved'` ends the send unresolved, reason `'refused'`: the record stays, and the user's
 * retry sends the same key (an answer the sender cannot act on, such as a 401 in a worker that
 * holds no token).
 *
 * @example
 * import {createClient, type Classification} from 'sendonce';
 *
 * // Resend answers a key reused with another body with 409 `invalid_idempotent_request`.
 * const client = createClient({
 * 	classify: (response, data): Classification =>
 * 		response.status === 409 && (data as {name?: string})?.name === 'invalid_idempotent_request' ? 'fail' : undefined,
 * });
 */
export type Classification = 'success' | 'retry' | 'fail' | 'unresolved' | undefined;

/**
 * Retry settings.
 *
 * @example
 * import {createClient, type RetryOptions} from 'sendonce';
 *
 * const retry: RetryOptions = {limit: 8, baseDelay: 500, budget: false};
 * const client = createClient({retry});
 */
export interface RetryOptions {
	/**
	 * Attempts per `send()` call, the first included.
	 * @default 5
	 */
	limit?: number;
	/**
	 * Milliseconds; the backoff cap before attempt n+1 is `baseDelay · 2^n`.
	 * @default 300
	 */
	baseDelay?: number;
	/**
	 * Largest backoff in milliseconds; also how long an offline wait lasts at most.
	 * @default 20_000
	 */
	maxDelay?: number;
	/**
	 * Largest `Retry-After` honoured, in milliseconds; a longer one stops the send as
	 * `unresolved`.
	 * @default 60_000
	 */
	maxRetryAfter?: number;
	/**
	 * Tokens in the client-wide retry budget (AWS SDK standard mode), or `false` for none.
	 * @default 500
	 */
	budget?: number | false;
}

/**
 * Anything that can stand behind a ky instance: we only check the shape.
 *
 * @example
 * import ky from 'ky';
 * import {createClient} from 'sendonce';
 *
 * const api = ky.create({prefixUrl: 'https://api.example.com', hooks: {beforeRequest: [addTracing]}});
 * const client = createClient({fetch: api}); // sendonce switches its retry, timeout and prefixUrl off
 */
export interface KyLike {
	(input: string, options?: Record<string, unknown>): Promise<Response>;
	extend(options: Record<string, unknown>): KyLike;
	create(options: Record<string, unknown>): KyLike;
}

/**
 * A fetch-compatible function. It is called as `fetch(url, init)`, with the URL as a string and
 * an init object of `method`, `headers` (a plain object), `body` (a string) and `signal`.
 *
 * @example
 * import {createClient, type FetchLike} from 'sendonce';
 *
 * const logged: FetchLike = async (input, init) => {
 * 	console.debug('sending', new Headers(init?.headers).get('idempotency-key'));
 * 	return fetch(input, init);
 * };
 * const client = createClient({fetch: logged});
 */
export type FetchLike = (input: RequestInfo | URL, init?: RequestInit) => Promise<Response>;

/**
 * Where intents are stored. See {@link IntentStore} for a custom one.
 *
 * @example
 * import {createClient, type StoreOption} from 'sendonce';
 *
 * const store: StoreOption = import.meta.env.TEST ? 'memory' : 'auto';
 * const client = createClient({store});
 */
export type StoreOption = 'auto' | 'indexeddb' | 'session' | 'memory' | IntentStore;

/**
 * A key-value store of plain records. Every method may reject; a rejection whose `name` is
 * `QuotaExceededError` is reported as `StoreError` with code `STORE_QUOTA`.
 *
 * @example
 * import {createClient, type IntentStore} from 'sendonce';
 *
 * const map = new Map<string, unknown>();
 * const store: IntentStore = {
 * 	async get(id) { return map.get(id); },
 * 	async set(id, value) { map.set(id, structuredClone(value)); },
 * 	async delete(id) { map.delete(id); },
 * 	async list() { return [...map]; },
 * };
 * const client = createClient({store});
 */
export interface IntentStore {
	get(id: string): Promise<unknown>;
	set(id: string, value: unknown): Promise<void>;
	delete(id: string): Promise<void>;
	/** Every `[id, value]` pair in the store. */
	list(): Promise<Array<[string, unknown]>>;
	/**
	 * Replace a value atomically with `updater(old)` (one IndexedDB readwrite transaction).
	 * Optional: without it, the cross-tab lease (used only where Web Locks are missing) is a
	 * read followed by a write.
	 */
	update?(id: string, updater: (old: unknown) => unknown): Promise<void>;
	/**
	 * `update` for several ids in one step (one IndexedDB transaction): how `resume()` marks a
	 * batch of intents as sending, and how settled intents are deleted together. Optional:
	 * without it, each id is updated alone.
	 */
	updateMany?(updates: Array<[id: string, updater: (old: unknown) => unknown]>): Promise<void>;
	/**
	 * `update`, for an id that most likely holds nothing yet: writes `value` when nothing is
	 * stored under `id`, else replaces what is stored with `updater(old)`, each atomically. How a
	 * new intent is written before its first attempt: in IndexedDB, an `add` that needs no read
	 * first saves a round trip to the browser's storage. Optional: without it, `update` is used.
	 */
	insert?(id: string, value: unknown, updater: (old: unknown) => unknown): Promise<void>;
	/** Empty the store; when missing, `client.clear()` deletes what `list()` returns. */
	clear?(): Promise<void>;
	/** Whether the store survives a reload. Custom stores are assumed durable. */
	readonly durable?: boolean;
	/**
	 * Whether other tabs use the same store at once, as they do IndexedDB. Where Web Locks are
	 * missing, sendonce then leases each intent to one sender through the record. A store one
	 * runtime owns (sessionStorage, AsyncStorage, memory) needs no lease: a lease left by a
	 * killed app would only delay its own restart.
	 * @default false
	 */
	readonly shared?: boolean;
}

/**
 * Options for {@link createClient}. Validated once; a bad value throws a `TypeError`.
 *
 * @example
 * import {createClient, type ClientOptions} from 'sendonce';
 *
 * const options: ClientOptions = {headers: () => ({authorization: `Bearer ${token()}`}), timeout: 10_000};
 * const client = createClient(options);
 */
export interface ClientOptions {
	/**
	 * Where intents are kept. `'auto'` tries IndexedDB, then sessionStorage, then memory.
	 * @default 'auto'
	 */
	store?: StoreOption;
	/**
	 * The transport: any fetch-compatible function, or a ky instance (its own retry and
	 * timeout are switched off for sendonce's calls; sendonce does not import ky).
	 * @default `globalThis.fetch`, looked up at each attempt
	 */
	fetch?: FetchLike | KyLike;
	/**
	 * @default 'Idempotency-Key'
	 */
	headerName?: string;
	/**
	 * `'sf-string'` sends the key as an RFC 8941 quoted string, as the IETF draft asks.
	 * @default 'raw'
	 */
	keyFormat?: 'raw' | 'sf-string';
	/**
	 * Headers sent with every attempt and never stored: put `Authorization` here. A function
	 * is called before each attempt, so a refreshed token is used.
	 * @default {}
	 */
	headers?: Record<string, string> | (() => Record<string, string> | Promise<Record<string, string>>);
	/**
	 * Request header names (besides `content-type` and `accept`) that are stored with the
	 * intent and so re-sent after a reload. Never a secret.
	 * @default []
	 */
	persistHeaders?: string[];
	/**
	 * A number is shorthand for `{limit}`.
	 * @default {limit: 5, baseDelay: 300, maxDelay: 20_000, maxRetryAfter: 60_000, budget: 500}
	 */
	retry?: number | RetryOptions;
	/**
	 * Milliseconds per attempt, reading the body included.
	 * @default 15_000
	 */
	timeout?: number;
	/**
	 * Milliseconds from creation during which an intent may be sent; after it, `expired`.
	 * Keep it within your server's key retention.
	 * @default 86_400_000 (24 h)
	 */
	window?: number;
	/**
	 * Decide an answer yourself, before the built-in chain; return `undefined` to fall through.
	 * @default undefined
	 */
	classify?: (response: ResponseInfo, data: unknown) => Classification;
	/**
	 * Receives every {@link SendOnceEvent}. Errors it throws are swallowed.
	 * @default undefined
	 */
	onEvent?: (event: SendOnceEvent) => void;
	/**
	 * Whether the servers this client sends to answer a check of a key (`intent.check()`), as
	 * `sendonce/server` does. `undefined`: only a method and URL whose answers said so (an
	 * `Idempotency-TTL` header), kept with each intent. `true`: every one, also where no answer
	 * ever came (a first request lost); only where every server is one that does, since a check
	 * sent to one that does not would be the request itself, without its body. `false`: never.
	 * @default undefined
	 */
	checks?: boolean;
	/**
	 * Makes a new idempotency key: a non-empty string of visible ASCII.
	 * @default crypto.randomUUID, else a v4 UUID from crypto.getRandomValues
	 */
	generateKey?: () => string;
	/**
	 * Whether the device is online, for runtimes without `navigator.onLine` (React Native:
	 * `() => netInfoState.isConnected !== false`). While it returns false the client waits,
	 * asking again every second, without spending attempts (at most `retry.maxDelay`).
	 * @default navigator.onLine where it exists
	 */
	isOnline?: () => boolean;
	/**
	 * Fingerprints requests (SHA-256, hex) where Web Crypto's `crypto.subtle` is missing: React
	 * Native, and pages served over insecure http:. Pass `sha256` from `sendonce/react-native`.
	 * @default crypto.subtle.digest
	 */
	sha256?: (text: string) => string | Promise<string>;
}

/**
 * Options for `client.intent()`.
 *
 * @example
 * import type {IntentOptions} from 'sendonce';
 *
 * // Only when the user chose "Send as a new message":
 * const options: IntentOptions = {replace: true};
 * await client.intent('contact-form', request, options);
 */
export interface IntentOptions {
	/**
	 * Start a new intent with a new key even when the stored one for this scope may have been
	 * sent. Only on the user's explicit choice ("send as a new message").
	 * @default false
	 */
	replace?: boolean;
}

/**
 * `fetch`'s `RequestInit`, plus the intent a POST, PUT, PATCH or DELETE makes: its scope, or the
 * scope and `replace`. Without it the scope is the method and the resolved URL: two different
 * bodies to one URL are then one scope (the second is refused while the first may have been sent).
 *
 * @example
 * import {createClient, type IntentInit} from 'sendonce';
 * import {createFetch} from 'sendonce/fetch';
 *
 * const init: IntentInit = {method: 'POST', body: JSON.stringify({sku: 'A1'}), headers: {'content-type': 'application/json'}, intent: 'checkout:42'};
 * const response = await createFetch(createClient())('/api/orders', init);
 */
export interface IntentInit extends RequestInit {
	intent?: string | {scope: string; replace?: boolean};
}

/**
 * Options for `intent.send()`.
 *
 * @example
 * import type {SendOptions} from 'sendonce';
 *
 * const controller = new AbortController();
 * const options: SendOptions = {signal: controller.signal};
 * const result = await intent.send(options); // unresolved, reason 'aborted', if aborted
 */
export interface SendOptions {
	/** Aborts the wait or the attempt; the intent stays stored. */
	signal?: AbortSignal;
}

