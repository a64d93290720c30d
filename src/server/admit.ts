import {isBodyTooLarge} from './body-too-large.js';
import type {Answer, Incoming} from './exchange.js';
import {parseKeyHeader} from './key-header.js';
import type {NormalizedOptions} from './options.js';
import {CHECK_HEADER, parseCheckHeader} from './check.js';
import {problem} from './problem.js';
import {BodyTooDeepError, bodyBytes, digest} from './request-fingerprint.js';

/**
 * What a request is to the server half: not its business (`pass`: a method it does not honour,
 * or no key where none is required), refused before anything is claimed (`refuse`: a malformed
 * or missing key, a body over `maxBody`), or keyed: its key, its id within its scope, and its
 * fingerprint.
 */
export type Admission =
	| {type: 'pass'}
	| {type: 'refuse'; answer: Answer}
	| {type: 'keyed'; key: string; id: string; fingerprint: string}
	| {type: 'check'; key: string; id: string; created: number; age?: number | undefined};

const PASS: Admission = {type: 'pass'};

function tooLarge(limit: number): Admission {
	// `connection: close`: the rest of a body that was not read is not worth reading to keep the connection.
	return {type: 'refuse', answer: problem(413, 'Request body too large', `A request with an idempotency key may carry at most ${limit} bytes here.`, [['connection', 'close']])};
}

/** Keys of different scopes never meet: the scope comes first, then a space the key cannot hold. */
function storageId(scope: string, key: string): string {
	return scope === '' ? key : `${scope} ${key}`;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
/** Bytes of UTF-8 a scope may take: with the key, it stays well inside what a Postgres index row holds. */
const MAX_SCOPE_BYTES = 2048;

/**
 * The request's scope, checked: two scopes a store would write alike (lone surrogates become
 * U+FFFD in UTF-8) would share their keys, a NUL cannot be stored in Postgres text, and a long
 * one would not fit its index.
 */
async function scopeOf(settings: NormalizedOptions, native: unknown): Promise<string> {
	if (!settings.scope) return '';
	const scope = await (settings.scope as (request: unknown) => string | Promise<string>)(native);
	if (typeof scope !== 'string') throw new TypeError(`Expected \`scope\` to return a string, got ${scope === null ? 'null' : typeof scope}`);
	if (LONE_SURROGATE.test(scope) || scope.includes('\0') || new TextEncoder().encode(scope).length > MAX_SCOPE_BYTES) {
		throw new TypeError(`Expected \`scope\` to return well-formed text without NUL, at most ${MAX_SCOPE_BYTES} bytes of UTF-8 (hash a longer one), got ${JSON.stringify(scope.slice(0, 40))}${scope.length > 40 ? '…' : ''}`);
	}

	return scope;
}

/**
 * A check of its key (docs/server-contract.md, "Checking a key"): `created=<epoch ms>`. Its body,
 * if any, is not read: a check is about the key alone. Its scope is the request's, as a retry's
 * is, so a user can ask about, and close, only their own keys.
 */
async function admitCheck(settings: NormalizedOptions, request: Incoming<unknown>, key: string, header: string): Promise<Admission> {
	const parsed = parseCheckHeader(header);
	if (parsed === undefined) return {type: 'refuse', answer: problem(400, 'Malformed idempotency check', `The ${CHECK_HEADER} header is \`created=<the key's creation time, in milliseconds since 1970>\`, optionally followed by \`, age=<milliseconds since, by the client's clock>\`.`)};
	return {type: 'check', key, id: storageId(await scopeOf(settings, request.native), key), ...parsed};
}

/** Reads the key, bounds and fingerprints the body, and finds the key's scope: in this order, each step only when the last allows it. */
export async function admit(settings: NormalizedOptions, request: Incoming<unknown>): Promise<Admission> {
	if (!settings.methods.has(request.method)) return PASS;
	const parsed = parseKeyHeader(request.header(settings.headerKey));
	if (parsed.type === 'malformed') return {type: 'refuse', answer: problem(400, 'Malformed idempotency key', `The ${settings.headerName} header is not a valid key: ${parsed.reason}.`)};
	if (parsed.type === 'missing') {
		if (!settings.required) return PASS;
		return {type: 'refuse', answer: problem(400, 'Idempotency key missing', `This request must carry an ${settings.headerName} header, so that a retry of it runs once.`)};
	}

	const check = request.header(CHECK_HEADER);
	if (check !== undefined) return admitCheck(settings, request, parsed.key, check);
	const length = request.header('content-length');
	if (length !== undefined && Number(length) > settings.maxBody) return tooLarge(settings.maxBody);
	let body;
	try {
		body = await request.body(settings.maxBody);
	} catch (error) {
		if (isBodyTooLarge(error)) return tooLarge(settings.maxBody);
		throw error;
	}

	// A body a parser read before (its own limit applied, not this one) is bounded by what it fingerprints as.
	let bytes: Uint8Array;
	try {
		bytes = bodyBytes(request.header('content-type'), body);
	} catch (error) {
		if (!(error instanceof BodyTooDeepError)) throw error;
		return {type: 'refuse', answer: problem(400, 'Request body too deeply nested', `${error.message}: it cannot be fingerprinted.`)};
	}

	if (bytes.length > settings.maxBody) return tooLarge(settings.maxBody);
	const fingerprint = await digest(request.method, request.target, bytes);
	return {type: 'keyed', key: parsed.key, id: storageId(await scopeOf(settings, request.native), parsed.key), fingerprint};
}
