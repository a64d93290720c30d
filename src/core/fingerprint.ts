import {SendOnceError} from './errors/send-once-error.js';

/** A SHA-256 in hex, for runtimes without Web Crypto: `sha256` from `sendonce/react-native`. */
export type Sha256 = (text: string) => string | Promise<string>;

interface NodeCrypto {
	createHash(algorithm: 'sha256'): {update(text: string): {digest(encoding: 'hex'): string}};
}

/**
 * SHA-256 (hex) over method, URL and the serialised body: the same form values always give
 * the same fingerprint. Node's own hash where the runtime hands it over at once, else Web
 * Crypto, else the `sha256` option (React Native, pages on insecure http: origins); all give the same hex, so records written by either
 * compare equal.
 */
export async function fingerprint(method: string, url: string, body: string | undefined, sha256?: Sha256): Promise<string> {
	const text = `${method} ${url}\n${body ?? ''}`;
	if (sha256) return sha256(text);
	// Node (≥ 20.16) and Bun hash at once, where Web Crypto hops to a thread pool: a tenth of the time.
	const node = (globalThis as {process?: {getBuiltinModule?: (name: string) => NodeCrypto | undefined}}).process?.getBuiltinModule?.('crypto');
	if (node) return node.createHash('sha256').update(text).digest('hex');
	const subtle = (globalThis as {crypto?: Crypto}).crypto?.subtle;
	if (!subtle) {
		throw new SendOnceError('NO_WEB_CRYPTO', process.env.NODE_ENV !== 'production' ? 'No crypto.subtle (React Native, http: pages): pass `sha256` from \'sendonce/react-native\' to createClient' : 'No crypto.subtle');
	}

	const digest = await subtle.digest('SHA-256', new TextEncoder().encode(text));
	return Array.from(new Uint8Array(digest), byte => byte.toString(16).padStart(2, '0')).join('');
}
