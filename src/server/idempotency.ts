import {NULL_BODY_STATUSES, type Answer, type HeaderList, type Incoming} from './exchange.js';
import {honour} from './honour.js';
import type {KeyStore} from './key-store.js';
import {unkeyedLeaseContext, type LeaseContext} from './lease-flow.js';
import {normalizeOptions, type AnyKeyStore, type IdempotencyOptions} from './options.js';
import {readStream} from './read-body.js';
import type {TransactionContext} from './transaction-flow.js';
import type {TransactionalKeyStore} from './transactional-store.js';

/**
 * What the handler is given besides the request and the framework's own context (Next.js's
 * `params`): with a lease store, the key, the claim's `fence` and a `signal` that aborts when the
 * lease is lost (`LeaseContext`); with a transactional store, the key and the transaction `tx`
 * (`TransactionContext`). `key` is a string whenever `required` is true.
 *
 * @example
 * import type {IdempotencyContext} from 'sendonce/server';
 *
 * const keyOf = (ctx: IdempotencyContext<true>): string => ctx.key;
 */
export type IdempotencyContext<Required extends boolean = boolean, Context extends object = object, Store extends AnyKeyStore = KeyStore> = Context & StoreContext<Store, Required>;

/**
 * The context a store gives the handler: a transaction for a transactional store, a fence and a
 * signal for a lease one.
 *
 * @example
 * import type {KeyStore, StoreContext} from 'sendonce/server';
 *
 * const fenceOf = (ctx: StoreContext<KeyStore, true>): number => ctx.fence;
 */
export type StoreContext<Store extends AnyKeyStore, Required extends boolean> = Store extends TransactionalKeyStore<infer Tx> ? TransactionContext<Tx, Required> : LeaseContext<Required>;

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
export type Idempotent<Required extends boolean, Store extends AnyKeyStore = KeyStore> = <Context extends object = object>(
	handler: (request: Request, ctx: IdempotencyContext<Required, Context, Store>) => Response | Promise<Response>,
) => FetchHandler<Context>;

/** Bodies whose bytes an adapter reads itself (`toNodeHandler`): read from there, bounded, instead of through a clone of the stream. */
const bodySources = new WeakMap<Request, (limit: number) => Promise<Uint8Array>>();

/** Tells `idempotency()` where `request`'s body can be read from, bounded. */
export function rememberBodySource(request: Request, read: (limit: number) => Promise<Uint8Array>): void {
	bodySources.set(request, read);
}

function incoming(request: Request): Incoming<Request> {
	return {
		method: request.method.toUpperCase(),
		get target() {
			const url = new URL(request.url);
			return url.pathname + url.search;
		},
		header: name => request.headers.get(name) ?? undefined,
		// The handler reads the request itself: the bytes come from a clone, or from the adapter that holds them.
		body: async limit => ({bytes: await (bodySources.get(request)?.(limit) ?? readStream(request.clone().body, limit))}),
		native: request,
		// No `hangUp`: the handler's promise is its answer, so its claim ends when it settles, and a
		// handler known to run is given its time whoever is still listening.
	};
}

/** The handler's answer, checked, and read to the end. */
async function answerOf(response: unknown): Promise<Answer> {
	const candidate = response as Partial<Response> | null | undefined;
	if (typeof candidate?.status !== 'number' || typeof candidate.arrayBuffer !== 'function' || typeof candidate.headers?.get !== 'function') {
		// Anything else would leave its key claimed until the lease ends.
		throw new TypeError(`Expected the handler to return a Response, got ${candidate === null ? 'null' : typeof candidate}`);
	}

	const checked = response as Response;
	// `Response.error()` (status 0, a network error) is no answer a client could be given, nor one to store.
	if (checked.status < 200 || checked.status > 599) throw new TypeError(`Expected the handler to return a Response with a status from 200 to 599, got ${checked.status}${checked.type === 'error' ? ' (Response.error())' : ''}`);
	return {status: checked.status, statusText: checked.statusText, headers: [...checked.headers], body: new Uint8Array(await checked.arrayBuffer())};
}

/** The bytes behind the responses `responseOf` made, for an adapter to send as they are. */
const bodiesOf = new WeakMap<Response, Uint8Array>();

/** An answer as a Fetch `Response`. */
export function responseOf(answer: Answer): Response {
	const nullBody = NULL_BODY_STATUSES.has(answer.status);
	const response = new Response(nullBody ? null : answer.body as Uint8Array<ArrayBuffer>, {
		status: answer.status,
		...(answer.statusText ? {statusText: answer.statusText} : {}),
		headers: answer.headers,
	});
	if (!nullBody) bodiesOf.set(response, answer.body);
	return response;
}

/**
 * The whole body of a response `idempotency()` answered with, while no one has read it: an
 * adapter that writes bytes (`toNodeHandler`) sends them at once instead of through its stream.
 */
export function bodyOf(response: Response): Uint8Array | undefined {
	return response.bodyUsed ? undefined : bodiesOf.get(response);
}

/** `response` with `headers` added (its own may be immutable: the response is rebuilt). */
function withResponseHeaders(response: Response, headers: HeaderList): Response {
	if (headers.length === 0) return response;
	const rebuilt = new Response(response.body, response);
	for (const [name, value] of headers) {
		if (name === 'vary') rebuilt.headers.append(name, value);
		else rebuilt.headers.set(name, value);
	}

	return rebuilt;
}

/**
 * Honours idempotency keys around a Fetch-standard handler: the first request with a key
 * claims it atomically in the store and runs the handler; a duplicate while it runs gets 409
 * with `Retry-After`; the handler's answer is stored for `ttl` and replayed to every later
 * duplicate with `Idempotent-Replayed: true`; the same key with another method, path or body
 * gets 422. A handler that throws or answers 5xx (408, 425, 429 too) releases the key, so the
 * client's retry runs it again.
 *
 * With a lease store (memory, Redis, Postgres) the handler gets `ctx.fence` and `ctx.signal`:
 * make its effect refuse a stale fence, or pass `ctx.key` on. With a transactional store
 * (`postgresTransactional`, `kyselyTransactional`) it gets `ctx.tx`, and its writes commit with
 * the key: exactly once by construction.
 *
 * @example
 * import {idempotency} from 'sendonce/server';
 *
 * const once = idempotency({required: true});
 * export const POST = once(async (request, {key}) => Response.json({received: key}, {status: 201}));
 */
export function idempotency<Required extends boolean = false, Store extends AnyKeyStore = KeyStore>(options?: IdempotencyOptions<Required, Store>): Idempotent<Required, Store> {
	const settings = normalizeOptions(options);

	return <Context extends object = object>(handler: (request: Request, ctx: IdempotencyContext<Required, Context, Store>) => Response | Promise<Response>): FetchHandler<Context> => {
		if (typeof handler !== 'function') throw new TypeError(`Expected the handler to be a function, got ${handler === null ? 'null' : typeof handler}`);
		// The extra's properties as they are: its `signal` is made only when the handler reads it.
		const call = (request: Request, context: Context | undefined, extra: object) =>
			handler(request, Object.defineProperties({...context}, Object.getOwnPropertyDescriptors(extra)) as IdempotencyContext<Required, Context, Store>);

		return async (request, context) => {
			const verdict = await honour(settings, incoming(request), async extra => answerOf(await call(request, context, extra)));
			if (verdict.type === 'pass') return withResponseHeaders(await call(request, context, unkeyedLeaseContext()), verdict.headers);
			return responseOf(verdict.answer);
		};
	};
}
