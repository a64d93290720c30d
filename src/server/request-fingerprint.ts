import {canonicalJson} from '../core/serialize.js';
import {sha256Hex} from './web-crypto.js';

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

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
 * JSON bodies, bytes otherwise). Node's crypto where the runtime has it, Web Crypto elsewhere
 * (Deno, Workers): the same hex either way.
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
	return sha256Hex(bytes);
}
