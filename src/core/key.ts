import {KeyGenerationError} from './errors/key-generation-error.js';

interface CryptoLike {
	randomUUID?: () => string;
	getRandomValues?: <T extends ArrayBufferView>(array: T) => T;
}

/**
 * A new idempotency key: `crypto.randomUUID()` where it exists (secure contexts), else a
 * version 4 UUID from `crypto.getRandomValues` (insecure origins, React Native with
 * `react-native-get-random-values`). Never `Math.random`.
 */
export function randomKey(crypto: CryptoLike | undefined = (globalThis as {crypto?: CryptoLike}).crypto): string {
	if (typeof crypto?.randomUUID === 'function') return crypto.randomUUID();
	if (typeof crypto?.getRandomValues !== 'function') throw new KeyGenerationError();

	const bytes = crypto.getRandomValues(new Uint8Array(16));
	bytes[6] = (bytes[6]! & 0x0f) | 0x40;
	bytes[8] = (bytes[8]! & 0x3f) | 0x80;
	const hex = Array.from(bytes, byte => byte.toString(16).padStart(2, '0')).join('');
	return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const VISIBLE_ASCII = /^[\x21-\x7e]+$/;

/** Checks what a custom `generateKey` returned. */
export function checkKey(key: unknown): string {
	if (typeof key !== 'string' || !VISIBLE_ASCII.test(key) || key.length > 255) {
		throw new TypeError(process.env.NODE_ENV !== 'production' ? `Expected \`generateKey\` to return 1 to 255 visible ASCII characters, got ${JSON.stringify(key)}` : 'Invalid key');
	}

	return key;
}

/** The header value for `key`: as it is, or as an RFC 8941 sf-string (quoted, escaped). */
export function formatKey(key: string, format: 'raw' | 'sf-string'): string {
	return format === 'sf-string' ? `"${key.replaceAll(/["\\]/g, '\\$&')}"` : key;
}
