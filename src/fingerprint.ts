import {sha256Hex, utf8} from './sha256.js';

interface SubtleLike {
	digest(algorithm: string, data: Uint8Array): Promise<ArrayBuffer>;
}

/**
 * SHA-256 (hex) over method, URL and the serialised body: the same form values always give
 * the same fingerprint. Web Crypto where present, the bundled fallback otherwise; both give
 * the same hex, so records written by either compare equal.
 */
export async function fingerprint(method: string, url: string, body: string | undefined): Promise<string> {
	const text = `${method} ${url}\n${body ?? ''}`;
	const subtle = (globalThis as {crypto?: {subtle?: SubtleLike}}).crypto?.subtle;
	if (typeof subtle?.digest !== 'function') return sha256Hex(text);

	const digest = await subtle.digest('SHA-256', utf8(text));
	return Array.from(new Uint8Array(digest), byte => byte.toString(16).padStart(2, '0')).join('');
}
