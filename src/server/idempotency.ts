import {readAnswer} from './answer.js';
import {corsHeaders, preflight, withHeaders} from './cors.js';
import {answerDuplicate} from './duplicate.js';
import {parseKeyHeader} from './key-header.js';
import {bodyOf} from './known-body.js';
import {keepLease} from './lease.js';
import {normalizeOptions, type IdempotencyOptions, type NormalizedOptions} from './options.js';
import {problem} from './problem.js';
import {requestFingerprint} from './request-fingerprint.js';
import {releases} from './release-rule.js';
import {randomUUID} from './web-crypto.js';

/**
 * What the handler is given besides the request: the idempotency key (to pass on to Stripe, a
 * queue, an outbox row), and whatever the framework passed as its second argument (Next.js's
 * `params`). `key` is a string whenever `required` is true.
 *
 * @example
 * import type {IdempotencyContext} from 'sendonce/server';
 *
 * const keyOf = (ctx: IdempotencyContext<true>): string => ctx.key;
 */
export type IdempotencyContext<Required extends boolean = boolean, Context extends object = object> = Context & {
	key: Required extends true ? string : string | undefined;
};

/**
 * A Fetch-standard handler: Next.js route handlers, Hono, Bun, Deno and Workers use it as is.
 *
 * @example
 * import type {FetchHandler} from 'sendonce/server';
 *
 * const hello: FetchHandler = async () => new Response('hello');
 */
export type FetchHandler<Context extends object = object> = (request: Request, context?: Context) => Promise<Response>;

/**
 * Wraps a handler so that it runs once per key (see `idempotency`).
 *
 * @example
 * import {idempotency, type Idempotent} from 'sendonce/server';
 *
 * const once: Idempotent<false> = idempotency();
 */
export type Idempotent<Required extends boolean> = <Context extends object = object>(
	handler: (request: Request, ctx: IdempotencyContext<Required, Context>) => Response | Promise<Response>,
) => FetchHandler<Context>;

/** The handler's answer, checked: anything else would leave its key claimed until the lease ends. */
function checkResponse(response: unknown): Response {
	const candidate = response as Partial<Response> | null | undefined;
	if (typeof candidate?.status !== 'number' || typeof candidate.arrayBuffer !== 'function' || typeof candidate.headers?.get !== 'function') {
		throw new TypeError(`Expected the handler to return a Response, got ${candidate === null ? 'null' : typeof candidate}`);
	}

	return response as Response;
}

/** Keys of different scopes never meet: the scope comes first, then a space the key cannot hold. */
function storageId(scope: string, key: string): string {
	return scope === '' ? key : `${scope} ${key}`;
}

async function scopeOf(options: NormalizedOptions, request: Request): Promise<string> {
	if (!options.scope) return '';
	const scope = await options.scope(request);
	if (typeof scope !== 'string') throw new TypeError(`Expected \`scope\` to return a string, got ${scope === null ? 'null' : typeof scope}`);
	return scope;
}

/**
 * Honours idempotency keys around a Fetch-standard handler: the first request with a key
 * claims it atomically in the store and runs the handler; a duplicate while it runs gets 409
 * with `Retry-After`; the handler's answer is stored for `ttl` and replayed to every later
 * duplicate with `Idempotent-Replayed: true`; the same key with another method, path or body
 * gets 422. A handler that throws or answers 5xx (408, 425, 429 too) releases the key, so the
 * client's retry runs it again: make the handler's own effect atomic, or pass `ctx.key` on.
 *
 * @example
 * import {idempotency} from 'sendonce/server';
 *
 * const once = idempotency({required: true});
 * export const POST = once(async (request, {key}) => Response.json({received: key}, {status: 201}));
 */
export function idempotency<Required extends boolean = false>(options?: IdempotencyOptions<Required>): Idempotent<Required> {
	const settings = normalizeOptions(options);
	const {store, lease, ttl, cors} = settings;

	return <Context extends object = object>(handler: (request: Request, ctx: IdempotencyContext<Required, Context>) => Response | Promise<Response>): FetchHandler<Context> => {
		if (typeof handler !== 'function') throw new TypeError(`Expected the handler to be a function, got ${handler === null ? 'null' : typeof handler}`);
		const run = (request: Request, context: Context | undefined, key: string | undefined) =>
			handler(request, {...context, key} as IdempotencyContext<Required, Context>);

		const honour = async (request: Request, context: Context | undefined): Promise<Response> => {
			if (!settings.methods.has(request.method)) return run(request, context, undefined);
			const parsed = parseKeyHeader(request.headers.get(settings.headerName));
			if (parsed.type === 'malformed') return problem(400, 'Malformed idempotency key', `The ${settings.headerName} header is not a valid key: ${parsed.reason}.`);
			if (parsed.type === 'missing') {
				if (settings.required) return problem(400, 'Idempotency key missing', `This request must carry an ${settings.headerName} header, so that a retry of it runs once.`);
				return run(request, context, undefined);
			}

			const {key} = parsed;
			const url = new URL(request.url);
			const body = await bodyOf(request);
			const fingerprint = await requestFingerprint(request.method, url.pathname + url.search, request.headers.get('content-type'), body);
			const id = storageId(await scopeOf(settings, request), key);
			const token = randomUUID();
			const found = await store.claim(id, {fingerprint, token, lease});

			if (found.state !== 'claimed') return answerDuplicate(found, {key, fingerprint}, settings);

			const report = (phase: 'renew' | 'complete' | 'release') => (error: unknown) => {
				settings.onError(error, {key, phase});
			};

			const release = async () => store.release(id, {token}).catch(report('release'));
			const stop = keepLease(store, id, token, lease, report('renew'));
			let response: Response;
			try {
				response = checkResponse(await run(request, context, key));
			} catch (error) {
				stop();
				await release();
				throw error;
			}

			stop();
			if (releases(response.status, settings.storeServerErrors)) {
				await release();
				return response;
			}

			let read: Awaited<ReturnType<typeof readAnswer>>;
			try {
				read = await readAnswer(response, settings.replayHeaders);
			} catch (error) {
				// The body failed midway: nothing can be stored, and the retry must be free to run.
				await release();
				throw error;
			}

			await store.complete(id, {token, fingerprint, answer: read.answer, ttl}).catch(report('complete'));
			return read.response;
		};

		return async (request, context) => {
			if (!cors) return honour(request, context);
			return preflight(cors, request, settings.methods) ?? withHeaders(await honour(request, context), corsHeaders(cors, request));
		};
	};
}
