import {SendOnceError} from './errors/send-once-error.js';

/** A SHA-256 in hex, for runtimes without Web Crypto: `sha256` from `sendonce/react-native`. */
export type Sha256 = (text: string) => string | Promise<string>;

/**
 * SHA-256 (hex) over method, URL and the serialised body: the same form values always give
 * the same fingerprint. Web Crypto, or the `sha256` option where it is missing (React Native,
 * pages on insecure http: origins); both give the same hex, so records written by either
 * compare equal.
 */
export async function fingerprint(method: string, url: string, body: string | undefined, sha256?: Sha256): Promise<string> {
	const text = `${method} ${url}\n${body ?? ''}`;
	if (sha256) return sha256(text);
	const subtle = (globalThis as {crypto?: Crypto}).crypto?.subtle;
	if (!subtle) {
		throw new SendOnceError('NO_WEB_CRYPTO', process.env.NODE_ENV !== 'production' ? 'No crypto.subtle (React Native, http: pages): pass `sha256` from \'sendonce/react-native\' to createClient' : 'No crypto.subtle');
	}

	const digest = await subtle.digest('SHA-256', new TextEncoder().encode(text));
	return Array.from(new Uint8Array(digest), byte => byte.toString(16).padStart(2, '0')).join('');
}
