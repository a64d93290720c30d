import {canonicalJson} from '../core/serialize.js';
import {canonicalJsonText, isCanonicalJsonBytes, MAX_DEPTH, stringifiedIfCanonical} from './canonical-json.js';
import type {RequestBody} from './exchange.js';
import {sha256Hex} from './web-crypto.js';

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;
const encoder = new TextEncoder();

/**
 * The body as it is fingerprinted: canonical JSON (members sorted by name, as sendonce's client
 * writes it, numbers as written) when it is JSON, so that the same values in another member
 * order match; its bytes otherwise.
 */
function canonicalBytes(contentType: string | undefined, body: Uint8Array): Uint8Array {
	if (body.length === 0 || contentType === undefined || !JSON_TYPE.test(contentType)) return body;
	// Canonical already (sendonce's client sends it so): its bytes are what the long way would write.
	if (isCanonicalJsonBytes(body)) return body;
	let text: string;
	try {
		text = new TextDecoder('utf-8', {fatal: true}).decode(body);
	} catch {
		return body;
	}

	// Not valid JSON after all: the bytes are the body.
	const canonical = canonicalJsonText(text);
	return canonical === undefined ? body : encoder.encode(canonical);
}

/**
 * The bytes a body is fingerprinted by: canonical JSON for a JSON body (bytes, or the value a
 * parser made of them: the same string either way), a parsed string's or Buffer's bytes, the
 * canonical JSON of any other parsed value (a form parsed into an object).
 */
export function bodyBytes(contentType: string | undefined, body: RequestBody): Uint8Array {
	if ('bytes' in body) return canonicalBytes(contentType, body.bytes);
	const {value} = body;
	if (value instanceof Uint8Array) return canonicalBytes(contentType, value);
	if (typeof value === 'string') return canonicalBytes(contentType, encoder.encode(value));
	if (value === undefined) return new Uint8Array(0);
	// Members in order already (a parser's reading of canonical JSON): written natively, the same text.
	const stringified = stringifiedIfCanonical(value);
	if (stringified !== undefined) return encoder.encode(stringified);
	if (deeperThan(value, MAX_DEPTH)) throw new BodyTooDeepError(MAX_DEPTH);
	return encoder.encode(canonicalJson(value));
}

/** A parsed body nested deeper than canonical JSON is written for: answered 400, in every process alike. */
export class BodyTooDeepError extends Error {
	override name = 'BodyTooDeepError' as const;

	constructor(limit: number) {
		super(`The request body nests objects and arrays more than ${limit} deep`);
	}
}

/** Whether `value` nests objects and arrays more than `limit` deep (counted without recursion). */
function deeperThan(value: unknown, limit: number): boolean {
	const stack: Array<[unknown, number]> = [[value, 0]];
	while (stack.length > 0) {
		const [item, depth] = stack.pop()!;
		if (typeof item !== 'object' || item === null || item instanceof Uint8Array) continue;
		if (depth >= limit) return true;
		for (const child of Object.values(item)) stack.push([child, depth + 1]);
	}

	return false;
}

/** SHA-256 (hex) over "METHOD target\n" and the body's bytes as `bodyBytes` gives them. */
export async function digest(method: string, target: string, body: Uint8Array): Promise<string> {
	return sha256Hex([encoder.encode(`${method.toUpperCase()} ${target}\n`), body]);
}

/**
 * SHA-256 (hex) over the method, the path with its query, and the body (canonical JSON for
 * JSON bodies, bytes otherwise). Node's crypto where the runtime has it, Web Crypto elsewhere
 * (Deno, Workers): the same hex either way.
 *
 * @example
 * import {requestFingerprint} from 'sendonce/server';
 *
 * const fingerprint = await requestFingerprint('POST', '/orders', 'application/json', new TextEncoder().encode('{"b":1,"a":2}'));
 */
export async function requestFingerprint(method: string, path: string, contentType: string | null, body: Uint8Array): Promise<string> {
	return digest(method, path, canonicalBytes(contentType ?? undefined, body));
}
