import type {Client} from '../core/client.js';
import {createClient} from '../stores/client.js';
import type {SendOnceClient} from '../core/client-api.js';
import {invalidRequest} from '../core/errors/invalid-request-error.js';
import {OutcomeUnknownError} from '../core/errors/outcome-unknown-error.js';
import {RequestRefusedError} from '../core/errors/request-refused-error.js';
import {toResponse} from '../core/response.js';
import type {ClientOptions, IntentInit, IntentMethod} from '../core/types.js';

export type {IntentInit} from '../core/types.js';

/**
 * A `fetch` with an intent for every POST, PUT, PATCH and DELETE (see {@link IntentInit}): the same
 * key across retries, reloads and restarts. It resolves to the `Response` of a settled intent (a
 * 2xx, or a definitive 4xx, as fetch would) and rejects with `OutcomeUnknownError` when the request
 * may have been sent. GET, HEAD and OPTIONS go straight to the transport.
 */
export type IntentFetch = (input: RequestInfo | URL, init?: IntentInit) => Promise<Response>;

/** Methods that pass straight to the transport: they need no intent. */
const PASS_THROUGH = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Body types a `Request` may carry that are text, and so can be stored and sent again. */
const TEXT_BODY = /^(?:text\/|application\/(?:[\w.-]+\+)?(?:json|xml|x-www-form-urlencoded|javascript)\b)/i;

/** The body of `request`, read once, when it is text; a binary or multipart body is refused. */
async function textOf(request: Request): Promise<string> {
	const type = request.headers.get('content-type') ?? '';
	const refused = (what: string) => invalidRequest('body', process.env.NODE_ENV !== 'production' && `\`body\` is ${what}: use text, JSON or a form, which can be stored and sent again byte for byte`);
	if (type && !TEXT_BODY.test(type)) throw refused(type);
	try {
		// Bytes that are not UTF-8 would be sent again as other bytes.
		return new TextDecoder('utf-8', {fatal: true, ignoreBOM: true}).decode(await request.arrayBuffer());
	} catch {
		throw refused('not UTF-8 text');
	}
}

/**
 * `RequestInit` members a stored intent cannot carry to its later attempts (after a reload,
 * from `resume()`), with the value `fetch` uses without them: any other value is refused
 * rather than dropped. Set them on the transport (the `fetch` option) instead.
 */
const UNSTORED_INIT = {credentials: 'same-origin', mode: 'cors', redirect: 'follow', cache: 'default', referrerPolicy: '', keepalive: false, integrity: '', priority: 'auto'} as const;

function checkUnstored(source: Request | undefined, init: RequestInit): void {
	for (const [name, usual] of Object.entries(UNSTORED_INIT)) {
		const given = (init as Record<string, unknown>)[name] ?? (source as unknown as Record<string, unknown> | undefined)?.[name];
		if (given !== undefined && given !== usual && !(name === 'referrerPolicy' && given === 'strict-origin-when-cross-origin')) {
			throw invalidRequest(name, process.env.NODE_ENV !== 'production' && `\`${name}: ${JSON.stringify(given)}\` cannot be kept for the intent's retries after a reload: set it in the client's \`fetch\` option instead`);
		}
	}
}

/** An absolute URL for a default scope (the page's location resolves a path). */
function resolveUrl(url: string): string {
	try {
		return new URL(url, (globalThis as {location?: {href?: string}}).location?.href).href;
	} catch {
		return url;
	}
}

/** A client made by `createClient` (its one-call send path), and not a look-alike. */
function isClient(value: unknown): value is Client {
	return typeof (value as Partial<Client> | undefined)?.sendNow === 'function';
}

/**
 * A `fetch` that makes every POST, PUT, PATCH and DELETE an intent, sent through the client
 * given, or through a new one made with `options`. Hand it to call sites and libraries that take
 * a `fetch` (openapi-fetch, ofetch, GraphQL clients). It replaces `client.fetch`, which the core
 * no longer carries: an app that sends forms with `client.send()` does not pay for it.
 *
 * @example
 * import createApiClient from 'openapi-fetch';
 * import {createClient} from 'sendonce';
 * import {createFetch} from 'sendonce/fetch';
 *
 * const client = createClient();
 * const api = createApiClient({baseUrl: 'https://api.example.com', fetch: createFetch(client)});
 */
export function createFetch(clientOrOptions?: SendOnceClient | ClientOptions): IntentFetch {
	const client = clientOrOptions && 'resume' in clientOrOptions ? clientOrOptions : createClient(clientOrOptions as ClientOptions | undefined);
	if (!isClient(client)) throw new TypeError('Expected a client made by createClient()');
	return async (input, init = {}) => {
		const {intent: named, ...rest} = init;
		const source = input instanceof Request ? input : undefined;
		const method = (rest.method ?? source?.method ?? 'GET').toUpperCase();
		if (PASS_THROUGH.has(method)) {
			const transport = client.options.fetch;
			return typeof transport === 'function' && !('extend' in transport) ? transport(input, rest) : fetch(input, rest);
		}

		checkUnstored(source, rest);
		const headers = new Headers(source?.headers);
		new Headers(rest.headers).forEach((value, name) => headers.set(name, value));
		const body = rest.body ?? (source?.body ? await textOf(source) : undefined);
		const url = source ? source.url : String(input);
		const {scope, replace = false} = typeof named === 'object' ? named : {scope: named ?? `${method} ${resolveUrl(url)}`};
		const request = {url, method: method as IntentMethod, headers: [...headers] as Array<[string, string]>, ...(body === undefined || body === null ? {} : {body: body as string})};
		const signal = rest.signal ?? source?.signal ?? undefined;
		const {intent, result, created} = await client.sendNow(scope, request, replace, signal);
		if (result.status === 'unresolved' && result.reason === 'aborted' && !result.mayHaveBeenSent && signal?.aborted) {
			// As fetch does: an abort before anything left is an AbortError, and this call leaves
			// nothing behind. A stored intent it joined was someone else's: it stays. One another
			// tab sent once this one let go may have reached the server: it stays, and says so.
			const sentElsewhere = created ? await intent.discardUnsent() : undefined;
			if (!sentElsewhere) throw signal.reason;
			throw new OutcomeUnknownError(intent, {...result, attempts: sentElsewhere.attempts, mayHaveBeenSent: true});
		}

		if (result.status === 'succeeded' || result.status === 'failed') return toResponse(result, intent.responseBody, intent.url);
		// Its key closed by a check (in another tab): the answer that said so is no answer to this request.
		if (result.status === 'not-sent') throw new RequestRefusedError(result);
		throw new OutcomeUnknownError(intent, result);
	};
}
