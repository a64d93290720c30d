/*
 * The corpus's CORS servers: the honest server with its CORS headers right, or broken one way.
 * A real Chromium checks each verdict (test/browser/check-cors.test.ts).
 */
import {corsServer, type CorsCase} from '../../server/broken/cors.js';
import {served, type CorpusEntry} from './entry.js';

/** A CORS entry: the case, the page's method and whether it sends cookies. */
export interface CorsEntry extends CorpusEntry {
	cors: CorsCase;
	method: 'POST' | 'PUT';
	credentials: boolean;
}

const COOKIE = ['-H', 'Cookie: session=s-1'];

function entry(cors: CorsCase, name: string, what: string, verdict: 'pass' | 'warn' | 'fail', {method = 'POST', credentials = false}: {method?: 'POST' | 'PUT'; credentials?: boolean} = {}): CorsEntry {
	return {
		name,
		what,
		cors,
		method,
		credentials,
		origin: true,
		flags: [...(method === 'POST' ? [] : ['-X', method]), ...(credentials ? COOKIE : [])],
		verdicts: {cors: verdict},
		once: true,
		start: served(origin => corsServer(origin, cors)),
	};
}

export const corsEntries: CorsEntry[] = [
	entry('right', 'sendonce/server, memory', 'keys required and per user (`scope`), CORS for the page', 'pass'),
	entry('credentialed', 'CORS for a page with cookies', 'the origin itself, `Allow-Credentials: true`, headers named', 'pass', {credentials: true}),
	entry('post-only', 'CORS: POST only, for PUT', '`Allow-Methods: POST`, probed with `-X PUT`', 'fail', {method: 'PUT'}),
	entry('key-not-allowed', 'CORS: key not allowed', '`Allow-Headers` without `Idempotency-Key`', 'fail'),
	entry('star-headers', 'CORS: `Allow-Headers: *`', '`*` for `Authorization`: the standard refuses it, browsers still allow it', 'warn'),
	entry('star-headers-credentialed', 'CORS: `Allow-Headers: *` with cookies', '`*`, no wildcard for a credentialed request', 'fail', {credentials: true}),
	entry('credentials-with-star', 'CORS: credentials with `*`', '`Allow-Origin: *` for a page with cookies', 'fail', {credentials: true}),
	entry('replay-without-cors', 'CORS: none on replays', 'replays without `Access-Control-Allow-Origin` (a CORS layer behind the idempotency one)', 'fail'),
	entry('replay-hidden', 'CORS: replay headers hidden', 'no `Access-Control-Expose-Headers`', 'warn'),
	entry('star-exposed-credentialed', 'CORS: `Expose-Headers: *` with cookies', '`*` exposes nothing to a credentialed request', 'warn', {credentials: true}),
];
