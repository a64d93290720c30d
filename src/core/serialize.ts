import {invalidRequest} from './errors/invalid-request-error.js';
import {fingerprint, type Sha256} from './fingerprint.js';
import {describe} from './describe.js';
import {headerPairs} from './headers.js';
import type {Session} from './intent.js';
import type {StandardSchemaV1} from './standard-schema.js';
import type {IntentMethod, IntentRequest} from './types.js';

/** The largest body an intent may carry, in UTF-8 bytes: it is stored with the intent. */
export const MAX_BODY_BYTES = 256 * 1024;

const METHODS = new Set<string>(['POST', 'PUT', 'PATCH', 'DELETE']);
const ALWAYS_PERSISTED = ['content-type', 'accept'];

/** A request made ready for storage: every attempt sends exactly this. */
export interface PreparedRequest {
	url: string;
	method: IntentMethod;
	/** Headers that are stored with the intent. */
	headers: Record<string, string>;
	/** What must not be stored: headers sent from this page only, the schema of the body. */
	session: Session;
	body?: string;
	fingerprint: string;
}

/**
 * JSON with object keys sorted, so that equal values give equal bytes. Refuses what
 * `JSON.stringify` would silently change or drop: functions, symbols, BigInt, non-finite
 * numbers, cycles, and objects that are neither plain nor arrays nor `toJSON`-able.
 */
export function canonicalJson(value: unknown, path = 'json', seen = new Set<object>(), calledToJson = false): string {
	if (value === null || typeof value === 'boolean' || typeof value === 'string') return JSON.stringify(value);
	if (typeof value === 'number') {
		if (!Number.isFinite(value)) throw invalidRequest(path, process.env.NODE_ENV !== 'production' && `\`${path}\` is ${value}, which JSON cannot represent`);
		return JSON.stringify(value);
	}

	if (typeof value !== 'object') throw invalidRequest(path, process.env.NODE_ENV !== 'production' && `\`${path}\` is a ${typeof value}, which JSON cannot represent`);
	if (seen.has(value)) throw invalidRequest(path, process.env.NODE_ENV !== 'production' && `\`${path}\` refers back to itself (a cycle), which JSON cannot represent`);

	// Like JSON.stringify, call `toJSON` once per value, not again on what it returned.
	const toJSON = (value as {toJSON?: unknown}).toJSON;
	if (typeof toJSON === 'function' && !calledToJson) return canonicalJson(toJSON.call(value), path, seen, true);

	seen.add(value);
	try {
		if (Array.isArray(value)) {
			// A plain loop: `map` skips the holes of a sparse array, which JSON writes as null.
			const items: string[] = [];
			for (let index = 0; index < value.length; index++) {
				const item: unknown = value[index];
				items.push(item === undefined ? 'null' : canonicalJson(item, `${path}[${index}]`, seen));
			}

			return `[${items.join(',')}]`;
		}

		const prototype = Object.getPrototypeOf(value) as unknown;
		if (prototype !== Object.prototype && prototype !== null) {
			throw invalidRequest(path, process.env.NODE_ENV !== 'production' && `\`${path}\` is a ${describe(value)}, not plain JSON data`);
		}

		const members: string[] = [];
		for (const name of Object.keys(value).sort()) {
			const member = (value as Record<string, unknown>)[name];
			// The serialisation hook itself is not data.
			if (member === undefined || (name === 'toJSON' && typeof member === 'function')) continue;
			members.push(`${JSON.stringify(name)}:${canonicalJson(member, `${path}.${name}`, seen)}`);
		}

		return `{${members.join(',')}}`;
	} finally {
		seen.delete(value);
	}
}

function resolveUrl(url: unknown): string {
	if (typeof url !== 'string' || url === '') throw invalidRequest('url', process.env.NODE_ENV !== 'production' && `Expected \`url\` to be a non-empty string, got ${describe(url)}`);
	const base = (globalThis as {location?: {href?: string}}).location?.href;
	let resolved: URL;
	try {
		resolved = new URL(url, base);
	} catch (error) {
		throw invalidRequest('url', process.env.NODE_ENV !== 'production' && `\`url\` "${url}" is not a valid${base ? '' : ' absolute'} URL`, {cause: error});
	}

	if (resolved.protocol !== 'http:' && resolved.protocol !== 'https:') {
		throw invalidRequest('url', process.env.NODE_ENV !== 'production' && `\`url\` "${url}" uses ${resolved.protocol}, not http: or https:`);
	}

	// fetch refuses such URLs, and the password would be stored with the intent.
	if (resolved.username !== '' || resolved.password !== '') {
		throw invalidRequest('url', process.env.NODE_ENV !== 'production' && '`url` holds a user name or password, which would be stored: use the `headers` option');
	}

	// React Native's own `URL` (without react-native-url-polyfill) appends a `/` to every path,
	// `…/orders` to `…/orders/`: where it does, an absolute URL is sent as written.
	return base || new URL('http://a/b').href === 'http://a/b' ? resolved.href : url;
}

const KNOWN_FIELDS = new Set(['url', 'method', 'json', 'body', 'headers', 'schema']);

function serialiseBody(request: IntentRequest): {body?: string; contentType?: string} {
	if (request.json !== undefined) return {body: canonicalJson(request.json), contentType: 'application/json'};
	const {body} = request;
	if (body === undefined) return {};
	if (typeof body === 'string') return {body, contentType: 'text/plain;charset=UTF-8'};
	if (body instanceof URLSearchParams) {
		return {body: body.toString(), contentType: 'application/x-www-form-urlencoded;charset=UTF-8'};
	}

	throw invalidRequest('body', process.env.NODE_ENV !== 'production' && `\`body\` is a ${describe(body)}: use a string, URLSearchParams or \`json\`, which can be stored and sent again byte for byte`);
}

/** How many bytes `text` takes in UTF-8 (a lone surrogate as U+FFFD, as `TextEncoder` writes it). */
function utf8Length(text: string): number {
	let length = 0;
	for (const char of text) {
		const point = char.codePointAt(0)!;
		length += point < 0x80 ? 1 : point < 0x8_00 ? 2 : point < 0x1_00_00 ? 3 : 4;
	}

	return length;
}

/**
 * What a request must hold before anything is stored. A typo (`jsn`) or `json` with `body` would
 * store and send a body other than the one meant, so production builds refuse them too, with a
 * short message; the schema's shape, only a programmer's mistake, development builds alone check.
 */
function checkRequest(request: IntentRequest): void {
	if (typeof request !== 'object' || request === null) {
		throw invalidRequest('request', process.env.NODE_ENV !== 'production' && `Expected the request to be an object, got ${describe(request)}`);
	}

	for (const field of Object.keys(request)) {
		if (!KNOWN_FIELDS.has(field)) throw invalidRequest(field, process.env.NODE_ENV !== 'production' && `Unknown request field \`${field}\`; expected ${[...KNOWN_FIELDS].join(', ')}`);
	}

	if (request.json !== undefined && request.body !== undefined) {
		throw invalidRequest('body', process.env.NODE_ENV !== 'production' && 'Pass either `json` or `body`, not both');
	}

	const {schema} = request;
	// Kept in production: without it the request is stored and sent, and the answer then fails to validate after the effect.
	// Truthy, as where it is used (Intent#validated): a schema there is never skipped here.
	if (schema && typeof (schema as Partial<StandardSchemaV1>)['~standard']?.validate !== 'function') {
		throw invalidRequest('schema', process.env.NODE_ENV !== 'production' && `Expected \`schema\` to be a Standard Schema validator (zod 4, valibot, arktype), got ${describe(schema)}`);
	}
}

/** Validates and serialises `request` once; throws `InvalidRequestError` naming the field. */
export async function prepareRequest(
	request: IntentRequest,
	options: {headerName: string; persistHeaders: readonly string[]; sha256?: Sha256 | undefined},
): Promise<PreparedRequest> {
	checkRequest(request);
	const url = resolveUrl(request.url);
	const method = (request.method ?? 'POST') as string;
	if (typeof method !== 'string' || !METHODS.has(method.toUpperCase())) {
		throw invalidRequest('method', process.env.NODE_ENV !== 'production' && `\`method\` ${String(method)} needs no intent: use POST, PUT, PATCH or DELETE`);
	}

	const {body, contentType} = serialiseBody(request);
	if (body !== undefined && utf8Length(body) > MAX_BODY_BYTES) {
		throw invalidRequest('body', process.env.NODE_ENV !== 'production' && `\`body\` is larger than ${MAX_BODY_BYTES / 1024} KiB, the most an intent can store`);
	}

	const headers: Record<string, string> = {};
	const sessionHeaders: Record<string, string> = {};
	if (contentType) headers['content-type'] = contentType;
	const persisted = new Set([...ALWAYS_PERSISTED, ...options.persistHeaders]);
	for (const [name, value] of headerPairs(request.headers, 'headers')) {
		const lower = name.toLowerCase();
		if (lower === options.headerName.toLowerCase()) {
			throw invalidRequest(`headers.${name}`, process.env.NODE_ENV !== 'production' && `\`headers.${name}\` is set by sendonce; do not pass your own key`);
		}

		(persisted.has(lower) ? headers : sessionHeaders)[lower] = value;
	}

	const upper = method.toUpperCase() as IntentMethod;
	return {url, method: upper, headers, session: {headers: sessionHeaders, schema: request.schema}, body, fingerprint: await fingerprint(upper, url, body, options.sha256)};
}
