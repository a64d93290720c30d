import {sha256Hex} from '../core/sha256.js';

/**
 * `ctx.downstreamKey(name)` for one keyed request: a key for one call its handler makes to another
 * service (a payment API's idempotency key, an email's Message-ID), derived by SHA-256 from the
 * request's key in its scope (so one user's keys never meet another's), its method, URL and body,
 * and `name`: the same in every run of the request (a retry after a crash, a lease lost, a rolled
 * back transaction), another for each `name`, and never the raw key, which it does not reveal.
 * Synchronous, in every runtime (the core's own SHA-256), so it reads where the call is made.
 */
export function downstreamKeys(id: string, fingerprint: string): (name: string) => string {
	return name => {
		if (typeof name !== 'string' || name === '') throw new TypeError(`Expected \`name\` to be a non-empty string naming the downstream call, got ${typeof name === 'string' ? '""' : typeof name}`);
		return sha256Hex(`sendonce downstream key\n${id}\n${fingerprint}\n${name}`);
	};
}
