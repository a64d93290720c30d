import {eventHook, type Emit, type IdempotencyEvent} from './events.js';
import type {KeyStore} from './key-store.js';
import {memoryKeyStore} from './memory.js';
import {isTransactional, type TransactionalKeyStore} from './transactional-store.js';
import {refuseUnknown} from './unknown-options.js';

/**
 * Cross-origin settings for browser clients: which origins may call, and the headers they
 * need (`Idempotency-Key` allowed; `Idempotent-Replayed` and `Retry-After` exposed).
 *
 * @example
 * import {idempotency, type CorsOptions} from 'sendonce/server';
 *
 * const cors: CorsOptions = {origin: ['https://shop.example'], credentials: true, allowHeaders: ['authorization']};
 * const once = idempotency({cors});
 */
export interface CorsOptions {
	/** `'*'` (any origin, without credentials), one origin, a list, or a test. */
	origin: string | readonly string[] | ((origin: string) => boolean);
	/** Send `Access-Control-Allow-Credentials: true` (cookies, HTTP auth). @default false */
	credentials?: boolean;
	/** Request headers to allow besides the key header, `Content-Type` and `Idempotency-Check`. @default [] */
	allowHeaders?: readonly string[];
	/** Response headers to expose besides `Idempotent-Replayed`, `Retry-After`, `Idempotency-Status` and `Idempotency-TTL`. @default [] */
	exposeHeaders?: readonly string[];
	/** Seconds a browser may cache a preflight answer. @default 600 */
	maxAge?: number;
}

/**
 * How `idempotency()` honours keys.
 *
 * @example
 * import {idempotency, memoryKeyStore, type IdempotencyOptions} from 'sendonce/server';
 *
 * const options: IdempotencyOptions<true> = {store: memoryKeyStore(), required: true, lease: 10_000};
 * const once = idempotency(options);
 */
export interface IdempotencyOptions<Required extends boolean = boolean, Store extends AnyKeyStore = AnyKeyStore> {
	/**
	 * Where keys are claimed and answers kept. A `KeyStore` (memory, Redis, Postgres) holds a
	 * lease while the handler runs; a transactional store (`postgresTransactional(pool)`,
	 * `kyselyTransactional(db)`) claims the key inside the handler's own transaction, which it
	 * hands over as `ctx.tx`. @default memoryKeyStore() (one process: dev and tests)
	 */
	store?: Store;
	/** How long an answer is replayed, in ms. @default 86_400_000 (24 h) */
	ttl?: number;
	/** Lease mode: how long a claim lives unless the running handler renews it (it does, every third of it), in ms. Refused with a transactional store, where no claim can expire. @default 30_000 */
	lease?: Store extends TransactionalKeyStore<any> ? never : number;
	/** The largest request body, in bytes, read to fingerprint a keyed request: a larger `Content-Length` is answered 413 before a byte is read, a longer stream 413 at the limit, and nothing is claimed. `Infinity` reads any size. @default 1_048_576 (1 MiB) */
	maxBody?: number;
	/** Keys are per scope (user, tenant): the same key in two scopes is two keys. @default one scope for all */
	scope?: (request: Request) => string | Promise<string>;
	/** A request of `methods` without a key gets 400; otherwise it runs without idempotency. @default false */
	required?: Required;
	/** The request header that carries the key. @default 'Idempotency-Key' */
	headerName?: string;
	/** The methods whose keys are honoured; others pass straight to the handler. @default ['POST', 'PUT', 'PATCH', 'DELETE'] */
	methods?: readonly string[];
	/** Seconds a 409 (the same key still running) asks the client to wait. @default 1 */
	retryAfter?: number;
	/** Store and replay 5xx answers instead of releasing the key for a retry. @default false */
	storeServerErrors?: boolean;
	/** Response headers to store and replay besides the safe set (content-type, location, etag, …); `set-cookie` is refused. @default [] */
	replayHeaders?: readonly string[];
	/** CORS headers for browser clients on other origins, and preflight answers; `true` is `{origin: '*'}`. @default undefined (no CORS headers) */
	cors?: CorsOptions | boolean;
	/**
	 * Told when the store fails after the handler ran (the answer is still sent), and when a
	 * claim lost its lease before its answer was stored (phase `'lease-lost'`, a
	 * `LeaseLostError`): then another request may have run the handler too. @default console.error
	 */
	onError?: (error: unknown, context: ErrorContext) => void;
	/**
	 * Told of every step of a keyed request's life (claimed, replayed, 409, 422, stored, released
	 * and why, lease lost, a transaction's open time), to count them; `openTelemetryEvents()`
	 * turns them into OpenTelemetry metrics and spans. A hook that throws is
	 * reported to `onError` (phase `'event'`) and changes nothing. @default undefined
	 */
	onEvent?: (event: IdempotencyEvent) => void;
	/**
	 * After the client hangs up, how long a route whose run sendonce cannot see (Express and
	 * node:http middleware; on Fastify, counted from the end of an async route) has left to give
	 * its answer, in ms: an answer given in time is stored for the retry as usual; otherwise the
	 * claim is given up (the key released with the event `released`, reason `'hang-up'`, and
	 * `ctx.signal` aborted; or the transaction rolled back), so that no framework that sends
	 * nothing once the client is gone holds a key or a transaction. A Fetch handler keeps its claim
	 * as long as its promise runs. @default 30_000
	 */
	hangUpWait?: number;
	/**
	 * How far a client's clock may be off the server's, in ms, where a check proves that a key
	 * never ran (docs/server-contract.md, "Checking a key"): a key is taken as made this much
	 * before the time its client gives, so a check closes it only once the store has remembered
	 * every claim for that long (a memory store that restarted, a flushed Redis: this long after).
	 * Smaller is sooner and trusts clients' clocks more. @default 600_000 (10 minutes)
	 */
	clockSkew?: number;
}

/**
 * What `onError` is told besides the error: the key, what failed, and the fence of the claim
 * concerned (lease mode).
 *
 * @example
 * import type {ErrorContext} from 'sendonce/server';
 *
 * const log = (error: unknown, {key, phase}: ErrorContext) => console.warn(phase, key, error);
 */
export interface ErrorContext {
	key: string;
	phase: 'renew' | 'complete' | 'release' | 'lease-lost' | 'event';
	fence?: number;
}

/**
 * Either kind of store `idempotency()` takes: a lease `KeyStore` or a transactional one.
 *
 * @example
 * import {memoryKeyStore, type AnyKeyStore} from 'sendonce/server';
 *
 * const store: AnyKeyStore = memoryKeyStore();
 */
export type AnyKeyStore = KeyStore | TransactionalKeyStore<any>;

export interface NormalizedCors {
	origin: (origin: string) => string | undefined;
	credentials: boolean;
	allowHeaders: string;
	exposeHeaders: string;
	maxAge: number;
}

export interface NormalizedOptions {
	store: AnyKeyStore;
	ttl: number;
	lease: number;
	maxBody: number;
	/** Called with the framework's own request (a Fetch `Request`, Express's `req`, Fastify's `request`). */
	scope: ((request: never) => string | Promise<string>) | undefined;
	required: boolean;
	headerName: string;
	/** `headerName` in lower case, as headers are looked up. */
	headerKey: string;
	methods: ReadonlySet<string>;
	retryAfter: number;
	storeServerErrors: boolean;
	replayHeaders: ReadonlySet<string>;
	cors: NormalizedCors | undefined;
	onError: NonNullable<IdempotencyOptions['onError']>;
	emit: Emit;
	hangUpWait: number;
	clockSkew: number;
}

/** Response headers that describe the answer and hold nothing of one client's session. */
export const SAFE_HEADERS = [
	'content-type',
	'content-language',
	'content-encoding',
	'content-disposition',
	'location',
	'link',
	'etag',
	'last-modified',
	'cache-control',
	'expires',
	'vary',
] as const;

const DEFAULT_METHODS = ['POST', 'PUT', 'PATCH', 'DELETE'];
const KNOWN = new Set(['store', 'ttl', 'lease', 'maxBody', 'scope', 'required', 'headerName', 'methods', 'retryAfter', 'storeServerErrors', 'replayHeaders', 'cors', 'onError', 'onEvent', 'hangUpWait', 'clockSkew']);
const CORS_KNOWN = new Set(['origin', 'credentials', 'allowHeaders', 'exposeHeaders', 'maxAge']);

const TOKEN = /^[!#$%&'*+.^_`|~\w-]+$/;

function describe(value: unknown): string {
	if (typeof value === 'string') return JSON.stringify(value);
	if (value === null || typeof value !== 'object') return String(value);
	return Array.isArray(value) ? 'an array' : 'an object';
}

function integer(name: string, value: unknown, fallback: number, {zero = false} = {}): number {
	if (value === undefined) return fallback;
	if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || (value === 0 && !zero)) {
		throw new TypeError(`Expected \`${name}\` to be a ${zero ? 'non-negative' : 'positive'} integer, got ${describe(value)}`);
	}

	return value;
}

function boolean(name: string, value: unknown, fallback: boolean): boolean {
	if (value === undefined) return fallback;
	if (typeof value !== 'boolean') throw new TypeError(`Expected \`${name}\` to be a boolean, got ${describe(value)}`);
	return value;
}

function headerNames(name: string, value: unknown): string[] {
	if (value === undefined) return [];
	if (!Array.isArray(value) || !value.every(item => typeof item === 'string' && TOKEN.test(item))) {
		throw new TypeError(`Expected \`${name}\` to be an array of header names, got ${describe(value)}`);
	}

	return value as string[];
}

function normalizeOrigin(value: unknown): NormalizedCors['origin'] {
	if (value === '*') return () => '*';
	if (typeof value === 'string' && value !== '') return origin => (origin === value ? origin : undefined);
	if (Array.isArray(value) && value.length > 0 && value.every(item => typeof item === 'string' && item !== '' && item !== '*')) {
		const allowed = new Set(value as string[]);
		return origin => (allowed.has(origin) ? origin : undefined);
	}

	if (typeof value === 'function') return origin => ((value as (origin: string) => unknown)(origin) === true ? origin : undefined);
	throw new TypeError(`Expected \`cors.origin\` to be '*', an origin, a non-empty array of origins or a function, got ${describe(value)}`);
}

function normalizeCors(value: unknown, headerName: string): NormalizedCors | undefined {
	if (value === undefined || value === false) return undefined;
	const cors = value === true ? {origin: '*'} : value;
	if (typeof cors !== 'object' || cors === null || Array.isArray(cors)) {
		throw new TypeError(`Expected \`cors\` to be a boolean or an object with \`origin\`, got ${describe(value)}`);
	}

	const options = cors as Partial<CorsOptions>;
	refuseUnknown(options, CORS_KNOWN, 'cors.');
	const credentials = boolean('cors.credentials', options.credentials, false);
	if (credentials && options.origin === '*') {
		throw new TypeError('Expected `cors.origin` to name the allowed origins when `cors.credentials` is true: browsers refuse credentials with `*`');
	}

	return {
		origin: normalizeOrigin(options.origin),
		credentials,
		allowHeaders: [headerName, 'Content-Type', 'Idempotency-Check', ...headerNames('cors.allowHeaders', options.allowHeaders)].join(', '),
		exposeHeaders: ['Idempotent-Replayed', 'Retry-After', 'Idempotency-Status', 'Idempotency-TTL', ...headerNames('cors.exposeHeaders', options.exposeHeaders)].join(', '),
		maxAge: integer('cors.maxAge', options.maxAge, 600, {zero: true}),
	};
}

function isKeyStore(value: unknown): value is AnyKeyStore {
	const store = value as Record<string, unknown> | null;
	if (typeof store !== 'object' || store === null) return false;
	const methods = isTransactional(store) ? ['transaction', 'complete'] : ['claim', 'renew', 'complete', 'release'];
	return methods.every(name => typeof store[name] === 'function');
}

function byteLimit(name: string, value: unknown, fallback: number): number {
	if (value === undefined) return fallback;
	if (value === Number.POSITIVE_INFINITY) return value;
	return integer(name, value, fallback);
}

/** Validates `options` once and fills in every default. */
export function normalizeOptions(options: unknown): NormalizedOptions {
	if (options === undefined) options = {};
	if (typeof options !== 'object' || options === null || Array.isArray(options)) {
		throw new TypeError(`Expected \`options\` to be an object, got ${describe(options)}`);
	}

	const given = options as IdempotencyOptions & Record<string, unknown>;
	refuseUnknown(given, KNOWN);
	if (given.store !== undefined && !isKeyStore(given.store)) {
		throw new TypeError(`Expected \`store\` to be a key store with claim, renew, complete and release (memoryKeyStore(), redisKeyStore(client), postgresKeyStore(pool)) or a transactional one (postgresTransactional(pool)), got ${describe(given.store)}`);
	}

	const transactional = isTransactional(given.store);
	if (transactional && given.lease !== undefined) {
		throw new TypeError('Unknown option `lease` with a transactional store: the key is claimed inside the handler\'s transaction, so no claim can expire');
	}

	if (given.scope !== undefined && typeof given.scope !== 'function') {
		throw new TypeError(`Expected \`scope\` to be a function of the request, got ${describe(given.scope)}`);
	}

	if (given.onError !== undefined && typeof given.onError !== 'function') {
		throw new TypeError(`Expected \`onError\` to be a function, got ${describe(given.onError)}`);
	}

	if (given.onEvent !== undefined && typeof given.onEvent !== 'function') {
		throw new TypeError(`Expected \`onEvent\` to be a function, got ${describe(given.onEvent)}`);
	}

	const headerName = given.headerName ?? 'Idempotency-Key';
	if (typeof headerName !== 'string' || !TOKEN.test(headerName)) {
		throw new TypeError(`Expected \`headerName\` to be a header name, got ${describe(given.headerName)}`);
	}

	const methods = given.methods ?? DEFAULT_METHODS;
	if (!Array.isArray(methods) || methods.length === 0 || !methods.every(method => typeof method === 'string' && TOKEN.test(method))) {
		throw new TypeError(`Expected \`methods\` to be a non-empty array of HTTP methods, got ${describe(given.methods)}`);
	}

	const lease = integer('lease', given.lease, 30_000);
	// Node's timers, which renew the lease and watch its end, hold at most 2^31 - 1 ms.
	if (lease > 2_147_483_647) throw new TypeError(`Expected \`lease\` to be at most 2147483647 ms (24.8 days), got ${lease}`);
	const ttl = integer('ttl', given.ttl, 86_400_000);
	if (!transactional && ttl < lease) throw new TypeError(`Expected \`ttl\` (${ttl} ms) to be at least \`lease\` (${lease} ms): an answer is kept at least as long as a claim`);
	const wait = transactional ? (given.store as {wait?: unknown}).wait : undefined;
	if (typeof wait === 'number' && ttl < wait) throw new TypeError(`Expected \`ttl\` (${ttl} ms) to be at least the store's \`wait\` (${wait} ms): a duplicate that waited for the first request must find its answer still kept`);

	const replayHeaders = headerNames('replayHeaders', given.replayHeaders).map(name => name.toLowerCase());
	if (replayHeaders.includes('set-cookie')) {
		throw new TypeError('Expected `replayHeaders` without `set-cookie`: a cookie belongs to the session of the client it was set for, and a replay may reach another one');
	}

	const hangUpWait = integer('hangUpWait', given.hangUpWait, 30_000, {zero: true});
	if (hangUpWait > 2_147_483_647) throw new TypeError(`Expected \`hangUpWait\` to be at most 2147483647 ms (24.8 days), got ${hangUpWait}`);
	const onError: NonNullable<IdempotencyOptions['onError']> = given.onError ?? ((error, {key, phase}) => {
		if (phase === 'lease-lost') console.error(`sendonce/server: key ${key} lost its lease before its answer was stored: its handler may have run twice`, error);
		else if (phase === 'event') console.error(`sendonce/server: onEvent threw for key ${key}`, error);
		else console.error(`sendonce/server: the key store failed to ${phase} key ${key}`, error);
	});

	return {
		store: given.store ?? memoryKeyStore(),
		ttl,
		lease,
		maxBody: byteLimit('maxBody', given.maxBody, 1_048_576),
		scope: given.scope,
		required: boolean('required', given.required, false),
		headerName,
		headerKey: headerName.toLowerCase(),
		methods: new Set((methods as string[]).map(method => method.toUpperCase())),
		retryAfter: integer('retryAfter', given.retryAfter, 1, {zero: true}),
		storeServerErrors: boolean('storeServerErrors', given.storeServerErrors, false),
		replayHeaders: new Set([...SAFE_HEADERS, ...replayHeaders]),
		cors: normalizeCors(given.cors, headerName),
		onError,
		emit: eventHook(given.onEvent, onError),
		hangUpWait,
		clockSkew: integer('clockSkew', given.clockSkew, 600_000, {zero: true}),
	};
}
