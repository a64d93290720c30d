import type {Answer} from './classify.js';

/**
 * Response headers sendonce reads that a page on another origin sees only when the server
 * names them in `Access-Control-Expose-Headers`.
 */
export type ExposedHeader = 'retry-after' | 'idempotent-replayed';

const PACED_STATUSES = new Set([409, 429, 503]);

/** The page's origin, where there is a page. */
function pageOrigin(): string | undefined {
	const origin = (globalThis as {location?: {origin?: string}}).location?.origin;
	return origin && origin !== 'null' ? origin : undefined;
}

/** Whether `url` is on another origin than the page (never outside a browser). */
export function isCrossOrigin(url: string): boolean {
	const origin = pageOrigin();
	return origin !== undefined && new URL(url).origin !== origin;
}

/**
 * A header this cross-origin answer should have shown and did not: `Retry-After` on a 409,
 * 429 or 503, or `Idempotent-Replayed` on a 2xx after an earlier attempt may have reached the
 * server (that one may also be a first execution, when the earlier attempt never arrived).
 * Either the server does not send it, or it does not expose it.
 */
export function hiddenHeader(answer: Answer, mayHaveReached: boolean): ExposedHeader | undefined {
	if (!('response' in answer) || !answer.cors) return undefined;
	const {status, headers} = answer.response;
	if (PACED_STATUSES.has(status) && headers['retry-after'] === undefined) return 'retry-after';
	if (mayHaveReached && status >= 200 && status < 300 && headers['idempotent-replayed'] === undefined) return 'idempotent-replayed';
	return undefined;
}

/**
 * After every attempt to another origin failed as a network error: whether its server
 * answers at all (a `no-cors` HEAD, whose answer needs no CORS). If it does, the browser most
 * likely refused the request for CORS, and the returned error says what the server must allow.
 * The browser does not say which header was missing (only its console does), nor whether
 * the POST itself left before its answer was blocked.
 */
export async function corsRefusal(url: string, error: unknown, headerName: string, timeout: number): Promise<Error | undefined> {
	if ((error as {name?: unknown} | undefined)?.name !== 'TypeError' || !isCrossOrigin(url)) return undefined;
	const controller = new AbortController();
	const timer = setTimeout(() => controller.abort(), timeout);
	try {
		await fetch(url, {method: 'HEAD', mode: 'no-cors', credentials: 'omit', cache: 'no-store', signal: controller.signal});
	} catch {
		return undefined;
	} finally {
		clearTimeout(timer);
	}

	const {origin} = new URL(url);
	const message = process.env.NODE_ENV !== 'production' ? `${origin} answers, but CORS refused the request: allow the \`${headerName}\` header (Access-Control-Allow-Headers), the method and this origin (the console says which is missing)` : origin;
	return Object.assign(new Error(message), {name: 'CorsError', cause: error});
}
