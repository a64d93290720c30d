import {canonicalJson} from '../serialize.js';
import {subtle} from './web-crypto.js';

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

function hex(buffer: ArrayBuffer): string {
	return Array.from(new Uint8Array(buffer), byte => byte.toString(16).padStart(2, '0')).join('');
}

/**
 * The body as it is fingerprinted: canonical JSON (object keys sorted, as sendonce's client
 * writes it) when it is JSON, so that the same values in another key order match; its bytes
 * otherwise.
 */
function canonicalBody(contentType: string | null, body: Uint8Array): Uint8Array {
	if (body.length === 0 || contentType === null || !JSON_TYPE.test(contentType)) return body;
	try {
		return new TextEncoder().encode(canonicalJson(JSON.parse(new TextDecoder('utf-8', {fatal: true}).decode(body))));
	} catch {
		// Not valid JSON after all: the bytes are the body.
		return body;
	}
}

/**
 * SHA-256 (hex) over the method, the path with its query, and the body (canonical JSON for
 * JSON bodies, bytes otherwise). Web Crypto: it runs in Node, Bun, Deno and Workers alike.
 *
 * @example
 * import {requestFingerprint} from 'sendonce/server';
 *
 * const fingerprint = await requestFingerprint('POST', '/orders', 'application/json', new TextEncoder().encode('{"b":1,"a":2}'));
 */
export async function requestFingerprint(method: string, path: string, contentType: string | null, body: Uint8Array): Promise<string> {
	const head = new TextEncoder().encode(`${method.toUpperCase()} ${path}\n`);
	const canonical = canonicalBody(contentType, body);
	const bytes = new Uint8Array(head.length + canonical.length);
	bytes.set(head);
	bytes.set(canonical, head.length);
	return hex(await subtle.digest('SHA-256', bytes));
}
