import {HEADER_NAME, HEADER_VALUE} from './headers.js';
import type {ClientOptions, IntentStore, ResponseInfo, Classification, SendOnceEvent, StoreOption, FetchLike, KyLike} from './types.js';

/** Options after normalisation: every default filled in, every value checked. */
export interface NormalizedOptions {
	store: StoreOption;
	fetch: FetchLike | KyLike | undefined;
	headerName: string;
	keyFormat: 'raw' | 'sf-string';
	headers: Record<string, string> | (() => Record<string, string> | Promise<Record<string, string>>);
	persistHeaders: readonly string[];
	retry: {limit: number; baseDelay: number; maxDelay: number; maxRetryAfter: number; budget: number | false};
	timeout: number;
	window: number;
	classify: ((response: ResponseInfo, data: unknown) => Classification) | undefined;
	onEvent: ((event: SendOnceEvent) => void) | undefined;
	generateKey: (() => string) | undefined;
	isOnline: (() => boolean) | undefined;
	sha256: ((text: string) => string | Promise<string>) | undefined;
	checks: boolean | undefined;
}

/** The defaults, in one place (SPEC.md "Options"). */
export const DEFAULTS = {
	store: 'auto',
	headerName: 'Idempotency-Key',
	keyFormat: 'raw',
	persistHeaders: [],
	retry: {limit: 5, baseDelay: 300, maxDelay: 20_000, maxRetryAfter: 60_000, budget: 500},
	timeout: 15_000,
	window: 86_400_000,
} as const;

const KNOWN = new Set([
	'store', 'fetch', 'headerName', 'keyFormat', 'headers', 'persistHeaders', 'retry', 'timeout', 'window',
	'classify', 'onEvent', 'generateKey', 'isOnline', 'sha256', 'checks',
]);
const RETRY_KNOWN = new Set(['limit', 'baseDelay', 'maxDelay', 'maxRetryAfter', 'budget']);
const SECRET_HEADERS = new Set(['authorization', 'proxy-authorization', 'cookie', 'set-cookie']);
const STORE_NAMES = new Set(['auto', 'indexeddb', 'session', 'memory']);
/** The longest delay `setTimeout` keeps: a larger one fires after about 1 ms. */
const MAX_TIMER_MS = 2 ** 31 - 1;

function fail(name: string, expected: string, value: unknown): never {
	const shown = typeof value === 'function' ? 'a function' : typeof value === 'number' ? String(value) : JSON.stringify(value) ?? String(value);
	throw new TypeError(`Expected \`${name}\` to be ${expected}, got ${shown}`);
}

function integer(name: string, value: unknown, min: number): void {
	if (typeof value !== 'number' || !Number.isInteger(value) || value < min) fail(name, `an integer ≥ ${min}`, value);
}

/** A duration that is handed to `setTimeout`. */
function delay(name: string, value: unknown, min: number): void {
	if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > MAX_TIMER_MS) {
		fail(name, `an integer from ${min} to ${MAX_TIMER_MS} (ms)`, value);
	}
}

function optionalFunction(name: string, value: unknown): void {
	if (value !== undefined && typeof value !== 'function') fail(name, 'a function', value);
}

function isStore(value: unknown): value is IntentStore {
	if (typeof value !== 'object' || value === null) return false;
	const store = value as Record<string, unknown>;
	return ['get', 'set', 'delete', 'list'].every(method => typeof store[method] === 'function');
}

function checkRetry(retry: ClientOptions['retry']): void {
	const defaults = DEFAULTS.retry;
	if (retry === undefined) return;
	if (typeof retry === 'number') return integer('retry', retry, 1);
	if (typeof retry !== 'object' || retry === null) fail('retry', 'a number or an object', retry);
	for (const name of Object.keys(retry)) {
		if (!RETRY_KNOWN.has(name)) throw new TypeError(`Unknown option \`retry.${name}\`; expected one of ${[...RETRY_KNOWN].join(', ')}`);
	}

	const {limit = defaults.limit, baseDelay = defaults.baseDelay, maxDelay = defaults.maxDelay, maxRetryAfter = defaults.maxRetryAfter, budget} = retry;
	integer('retry.limit', limit, 1);
	delay('retry.baseDelay', baseDelay, 0);
	delay('retry.maxDelay', maxDelay, 0);
	delay('retry.maxRetryAfter', maxRetryAfter, 0);
	if (budget !== false) integer('retry.budget', budget ?? defaults.budget, 1);
	if (maxDelay < baseDelay) fail('retry.maxDelay', `at least \`retry.baseDelay\` (${baseDelay})`, maxDelay);
}

/**
 * Checks every option, ky style: what only a programmer's mistake gets wrong, so development
 * builds alone carry it (a production build drops it, see scripts/dev-only.ts).
 */
function checkOptions(options: ClientOptions): void {
	if (typeof options !== 'object' || options === null) fail('options', 'an object', options);
	for (const name of Object.keys(options)) {
		if (!KNOWN.has(name)) throw new TypeError(`Unknown option \`${name}\`; expected one of ${[...KNOWN].join(', ')}`);
	}

	const {store = DEFAULTS.store, headerName = DEFAULTS.headerName, keyFormat = DEFAULTS.keyFormat, headers = {}, persistHeaders = DEFAULTS.persistHeaders} = options;
	if (!(typeof store === 'string' && STORE_NAMES.has(store)) && !isStore(store)) {
		fail('store', '\'auto\', \'indexeddb\', \'session\', \'memory\' or an object with get, set, delete and list', store);
	}

	if (typeof headerName !== 'string' || !HEADER_NAME.test(headerName)) fail('headerName', 'an HTTP header name', headerName);
	if (keyFormat !== 'raw' && keyFormat !== 'sf-string') fail('keyFormat', '\'raw\' or \'sf-string\'', keyFormat);
	if (typeof headers !== 'function') {
		if (typeof headers !== 'object' || headers === null) fail('headers', 'an object of strings or a function', headers);
		for (const [name, value] of Object.entries(headers)) {
			if (!HEADER_NAME.test(name)) fail('headers', 'an object keyed by HTTP header names', name);
			if (typeof value !== 'string' || !HEADER_VALUE.test(value)) fail(`headers.${name}`, 'a string without line breaks, NUL or characters above U+00FF', value);
		}
	}

	if (!Array.isArray(persistHeaders) || !persistHeaders.every(name => typeof name === 'string' && HEADER_NAME.test(name))) {
		fail('persistHeaders', 'an array of header names', persistHeaders);
	}

	const secret = persistHeaders.find(name => SECRET_HEADERS.has(name.toLowerCase()));
	if (secret) fail('persistHeaders', `free of secrets (send \`${secret}\` with the \`headers\` option)`, persistHeaders);
	const fetchOption = options.fetch;
	if (fetchOption !== undefined && typeof fetchOption !== 'function') fail('fetch', 'a fetch-compatible function or a ky instance', fetchOption);
	checkRetry(options.retry);
	delay('timeout', options.timeout ?? DEFAULTS.timeout, 1);
	integer('window', options.window ?? DEFAULTS.window, 1);
	for (const name of ['classify', 'onEvent', 'generateKey', 'isOnline', 'sha256'] as const) optionalFunction(name, options[name]);
	if (options.checks !== undefined && typeof options.checks !== 'boolean') fail('checks', 'a boolean', options.checks);
}

/** `defaults`, with what `given` sets (an `undefined` sets nothing). */
function filled<T extends object, G extends object>(defaults: T, given: G | undefined): T & G {
	const result: Record<string, unknown> = {...defaults as Record<string, unknown>};
	for (const [name, value] of Object.entries(given ?? {})) if (value !== undefined) result[name] = value;
	return result as T & G;
}

/** Fills in defaults once; development builds check every value first. */
export function normalizeOptions(options: ClientOptions = {}): NormalizedOptions {
	if (process.env.NODE_ENV !== 'production') checkOptions(options);
	const persistHeaders = (options.persistHeaders ?? []).map(name => name.toLowerCase());
	// A secret would be stored in clear with every intent: refused in production builds too.
	if (persistHeaders.some(name => SECRET_HEADERS.has(name))) throw new TypeError('Secret in `persistHeaders`');
	// A `window` that is no whole number (Infinity, "86400000") makes every record invalid: never
	// sent, set aside. A `timeout` past what `setTimeout` keeps aborts each attempt after 1 ms,
	// once it has reached the server. Refused in production builds too.
	const {timeout, window} = options;
	if (timeout !== undefined && !(Number.isInteger(timeout) && timeout >= 1 && timeout <= MAX_TIMER_MS)) throw new TypeError('Invalid `timeout`');
	if (window !== undefined && !(Number.isInteger(window) && window >= 1)) throw new TypeError('Invalid `window`');
	const {retry} = options;
	return {
		...filled(DEFAULTS, options),
		headers: options.headers ?? {},
		persistHeaders,
		retry: typeof retry === 'number' ? {...DEFAULTS.retry, limit: retry} : filled(DEFAULTS.retry, retry),
	} as NormalizedOptions;
}
