import type {IncomingHttpHeaders, IncomingMessage, ServerResponse} from 'node:http';
import {tracingChannel} from 'node:diagnostics_channel';
import {Readable} from 'node:stream';
import {headerList, joinHeader, groupHeaders, NULL_BODY_STATUSES, type Answer, type Incoming} from './exchange.js';
import {corsHeaders} from './cors.js';
import {honour, type HandlerContext, type Verdict} from './honour.js';
import type {StoreContext} from './idempotency.js';
import type {KeyStore} from './key-store.js';
import {unkeyedLeaseContext} from './lease-flow.js';
import {normalizeOptions, type AnyKeyStore, type IdempotencyOptions} from './options.js';
import {ClientHangUp, type HangUp} from './hang-up.js';
import {captureNodeResponse, hangUpSignal} from './node-capture.js';
import {problem} from './problem.js';
import {readNodeBody, readStream} from './read-body.js';
import {BodyTooLargeError, isBodyTooLarge} from './body-too-large.js';

/** A Fastify request, as far as the plugin reads it. */
interface FastifyRequestLike {
	method: string;
	url: string;
	headers: IncomingHttpHeaders;
	raw?: IncomingMessage;
	routeOptions?: {config?: Record<PropertyKey, unknown>};
	body?: unknown;
}

/** A Fastify reply, as far as the plugin writes it. */
interface FastifyReplyLike {
	statusCode: number;
	raw: ServerResponse;
	code(status: number): unknown;
	header(name: string, value: unknown): unknown;
	getHeaders(): Record<string, string | string[] | number | undefined>;
	send(payload?: unknown): unknown;
	hijack(): unknown;
}

/** A Fastify instance, as far as the plugin hooks into it. */
interface FastifyInstanceLike {
	addHook(name: string, hook: (...args: any[]) => unknown): unknown;
}

/**
 * `IdempotencyOptions`, with `scope` reading the Fastify request (where `request.user` lives).
 *
 * @example
 * import type {FastifyIdempotencyOptions} from 'sendonce/server';
 *
 * const options: FastifyIdempotencyOptions = {scope: request => String(request.headers['x-user-id'])};
 */
export type FastifyIdempotencyOptions<Required extends boolean = boolean, Store extends AnyKeyStore = AnyKeyStore> = Omit<IdempotencyOptions<Required, Store>, 'scope'> & {
	scope?: (request: FastifyRequestLike) => string | Promise<string>;
};

/**
 * The plugin `fastifyIdempotency()` returns: register it (`await app.register(plugin)`), and it
 * honours keys on the routes of the context it is registered in. `context(request)` is what a
 * route is given besides the request: the key, and the fence and signal (lease store) or the
 * transaction (transactional store).
 *
 * @example
 * import {fastifyIdempotency, type FastifyIdempotency} from 'sendonce/server';
 *
 * const idempotent: FastifyIdempotency<true> = fastifyIdempotency({required: true});
 */
export interface FastifyIdempotency<Required extends boolean = boolean, Store extends AnyKeyStore = KeyStore> {
	(instance: FastifyInstanceLike, options: unknown, done: (error?: Error) => void): void;
	/** The context of `request`, typed by the store. */
	context(request: object): StoreContext<Store, Required>;
}

interface Pending {
	answer: {resolve(answer: Answer): void; reject(error: unknown): void};
	outcome: Promise<Verdict>;
	/** The route took the response over (`reply.hijack()`): its writes are captured instead. */
	hijacked: boolean;
	/** The route (or Fastify for it) called `reply.send`: its answer comes through `onSend`. */
	sent: boolean;
	/** The route returned (or awaited) the reply itself: it sends later, so an end without a send says nothing. */
	returnedReply: boolean;
	/** Its async handler has started and not settled: a hang-up gives it time until it does. */
	handlerRunning: boolean;
	reply: FastifyReplyLike;
}

/** The requests whose route runs with a claim, for the handler channel to find. */
const running = new WeakMap<object, Pending>();

/** For each keyed request: gives its claim's time after a hang-up a start, once the client is gone and no handler is known to run. */
const giveUps = new WeakMap<object, () => void>();

/**
 * Fastify tells through its `fastify.request.handler` tracing channel when a route's handler
 * starts and when an async one settled, just after it sent (or did not send) what the route
 * returned. So a hang-up gives a running async handler its time until it settles (`hangUpWait`
 * counts from then), and a route whose client hung up that returned nothing, which Fastify sends
 * nothing for, so that no hook runs, has its answer stored as it set it (status, headers, no
 * body) instead of its claim held for the life of the process.
 */
let listening = false;
function listenToHandlers(): void {
	if (listening) return;
	listening = true;
	const ignore = () => undefined;
	const requestOf = (message: unknown) => (message as {request: object}).request;
	tracingChannel('fastify.request.handler').subscribe({
		start(message) {
			const state = running.get(requestOf(message));
			if (state) state.handlerRunning = true;
		},
		end(message) {
			const state = running.get(requestOf(message));
			// A handler that returned no promise may still answer later, unseen: only the wait bounds it.
			if (!state || (message as {async?: boolean}).async) return;
			state.handlerRunning = false;
			giveUps.get(requestOf(message))?.();
		},
		asyncStart: ignore,
		error: ignore,
		asyncEnd(message) {
			const request = requestOf(message);
			const state = running.get(request);
			if (!state) return;
			state.handlerRunning = false;
			// Sent nothing because the client is gone: a route that ended the raw response itself is `onResponse`'s.
			if (state.sent || state.hijacked || state.returnedReply || state.reply.raw.writableEnded) {
				giveUps.get(request)?.();
				return;
			}

			running.delete(request);
			const {reply} = state;
			state.answer.resolve({status: reply.statusCode, headers: headerList(reply.getHeaders()), body: new Uint8Array(0)});
		},
	});
}

/**
 * How many of the request's route's `preHandler` hooks come after sendonce's context hook, read
 * from Fastify's route context (0 where it cannot be read: the claim then happens as before).
 */
function hooksAfterClaim(request: object): number {
	const symbol = Object.getOwnPropertySymbols(request).find(candidate => candidate.description === 'fastify.context');
	const hooks = symbol && (request as Record<symbol, {preHandler?: Array<{name?: string}> | null} | undefined>)[symbol]?.preHandler;
	if (!Array.isArray(hooks)) return 0;
	for (let index = hooks.length - 1; index >= 0; index--) {
		const {name} = hooks[index]!;
		if (name === 'bound sendonceClaim' || name === 'sendonceClaim') return hooks.length - 1 - index;
	}

	return 0;
}

/** The hang-up the lifecycle waits on: the client gone, and no async handler of the request still running. */
function fastifyHangUp(request: object, reply: FastifyReplyLike): HangUp {
	const hangUp = new ClientHangUp();
	const gone = hangUpSignal(reply.raw);
	const check = () => {
		const state = running.get(request);
		// A hijacked reply's route is never told to have ended: only the wait bounds it.
		if (gone.aborted && !(state?.handlerRunning && !state.hijacked)) hangUp.abort();
	};

	giveUps.set(request, check);
	if (gone.aborted) queueMicrotask(check);
	else gone.addEventListener('abort', check, {once: true});
	return hangUp;
}

function deferred<T>() {
	let resolve!: (value: T) => void;
	let reject!: (error: unknown) => void;
	const promise = new Promise<T>((settle, fail) => {
		resolve = settle;
		reject = fail;
	});
	return {promise, resolve, reject};
}

/** A payload as Fastify hands it to `onSend` (a string, a Buffer, a stream, nothing), as bytes. */
async function payloadBytes(payload: unknown): Promise<Uint8Array> {
	if (payload === null || payload === undefined) return new Uint8Array(0);
	if (typeof payload === 'string') return Buffer.from(payload);
	if (payload instanceof Uint8Array) return payload;
	if (payload instanceof ReadableStream) return readStream(payload as ReadableStream<Uint8Array>, Number.POSITIVE_INFINITY);
	const chunks: Buffer[] = [];
	for await (const chunk of payload as AsyncIterable<Buffer | string>) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
	return Buffer.concat(chunks);
}

function setHeaders(reply: FastifyReplyLike, answer: Answer): void {
	for (const [name, value] of groupHeaders(answer.headers)) reply.header(name, value);
}

function incoming(request: FastifyRequestLike, reply: FastifyReplyLike, raw: Uint8Array | undefined): Incoming<FastifyRequestLike> {
	return {
		method: request.method.toUpperCase(),
		target: request.url,
		header: name => joinHeader(request.headers[name]),
		// The bytes `preParsing` kept, or, for a body no hook saw, what Fastify's parser made of it.
		body: async () => (raw ? {bytes: raw} : {value: request.body}),
		native: request,
		get hangUp() {
			return fastifyHangUp(request, reply);
		},
	};
}

/** Reads a request's payload stream to its end, at most `limit` bytes: beyond, it rejects with a `BodyTooLargeError`. */
async function readPayload(payload: AsyncIterable<Buffer | string>, limit: number): Promise<Uint8Array> {
	const chunks: Buffer[] = [];
	let total = 0;
	for await (const chunk of payload) {
		const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
		total += bytes.length;
		if (total > limit) throw new BodyTooLargeError(limit);
		chunks.push(bytes);
	}

	return Buffer.concat(chunks);
}

/** A body over `maxBody`, as Fastify's error handler is handed it: a 413, answered as problem+json by `onSend`. */
function tooLargeError(error: BodyTooLargeError): BodyTooLargeError & {statusCode: number} {
	return Object.assign(error, {statusCode: 413});
}

/**
 * A Fastify 5 plugin that honours idempotency keys on the routes of the context it is registered
 * in, as `idempotency()` does for a Fetch handler: `onRequest` refuses a `Content-Length` over
 * `maxBody`; `preHandler` claims the key (or answers the replay, 409, 422); `onSend` stores the
 * route's answer (or commits it with the transaction) before it goes out. Fastify's own
 * `bodyLimit` bounds a streamed body. A route finds the key, the fence and signal, or the
 * transaction in `plugin.context(request)`.
 *
 * @example
 * import Fastify from 'fastify';
 * import {fastifyIdempotency} from 'sendonce/server';
 *
 * const app = Fastify();
 * const idempotent = fastifyIdempotency({required: true});
 * await app.register(idempotent);
 * app.post('/orders', async (request, reply) => {
 * 	reply.code(201);
 * 	return {id: 1, key: idempotent.context(request).key};
 * });
 */
export function fastifyIdempotency<Required extends boolean = false, Store extends AnyKeyStore = KeyStore>(options?: FastifyIdempotencyOptions<Required, Store>): FastifyIdempotency<Required, Store> {
	const settings = normalizeOptions(options);
	const pending = new WeakMap<object, Pending>();
	const contexts = new WeakMap<object, HandlerContext>();
	/** The bytes of keyed bodies, kept by `preParsing` before Fastify parses them: fingerprinted as they came. */
	const bodies = new WeakMap<object, Uint8Array>();
	const keyed = (request: FastifyRequestLike) => settings.methods.has(request.method.toUpperCase()) && request.headers[settings.headerKey] !== undefined;

	const send = (reply: FastifyReplyLike, answer: Answer) => {
		reply.code(answer.status);
		setHeaders(reply, answer);
		// No bytes, no payload: Fastify would give an empty Buffer a `content-type` the answer did not have (a redirect's).
		reply.send(NULL_BODY_STATUSES.has(answer.status) || answer.body.byteLength === 0 ? undefined : Buffer.from(answer.body.buffer, answer.body.byteOffset, answer.body.byteLength));
		return reply;
	};

	const corsOf = (request: FastifyRequestLike) => (settings.cors ? corsHeaders(settings.cors, joinHeader(request.headers.origin)) : []);
	/** Keyed requests whose body was over `maxBody`: their 413, for `onSend` to answer with. */
	const tooLarge = new WeakMap<object, Answer>();

	const onRequest = async (request: FastifyRequestLike, reply: FastifyReplyLike) => {
		if (!keyed(request)) return undefined;
		if (Number(request.headers['content-length']) > settings.maxBody) {
			return send(reply, problem(413, 'Request body too large', `A request with an idempotency key may carry at most ${settings.maxBody} bytes here.`, [['connection', 'close'], ...corsOf(request)]));
		}

		return undefined;
	};

	const preHandler = async (request: FastifyRequestLike, reply: FastifyReplyLike) => {
		const answer = deferred<Answer>();
		const started = deferred<HandlerContext>();
		const outcome = honour(settings, incoming(request, reply, bodies.get(request)), async ctx => {
			started.resolve(ctx);
			return answer.promise;
		});
		const first = await Promise.race([started.promise.then(ctx => ({ctx})), outcome.then(verdict => ({verdict}))]);
		if ('verdict' in first) {
			if (first.verdict.type === 'answer') return send(reply, first.verdict.answer);
			for (const [name, value] of first.verdict.headers) reply.header(name, value);
			contexts.set(request, unkeyedLeaseContext());
			return undefined;
		}

		// The route runs now; `onSend` hands its answer over, and waits for it to be stored.
		outcome.catch(() => undefined);
		contexts.set(request, first.ctx);
		const state: Pending = {answer, outcome, hijacked: false, sent: false, returnedReply: false, handlerRunning: false, reply};
		pending.set(request, state);
		running.set(request, state);
		const sendNow = reply.send;
		reply.send = function (this: FastifyReplyLike, payload?: unknown) {
			state.sent = true;
			reply.send = sendNow;
			return sendNow.call(this, payload);
		};
		// `return reply` from an async route: its promise takes the reply's `then`, which settles when the response does.
		const thenable = reply as unknown as {then(...args: unknown[]): unknown};
		const thenNow = thenable.then;
		thenable.then = function (this: unknown, ...args: unknown[]) {
			state.returnedReply = true;
			thenable.then = thenNow;
			return thenNow.apply(this, args);
		};
		// A route that answers itself (server-sent bytes, a proxied answer) skips onSend: capture its writes instead.
		const hijack = reply.hijack.bind(reply);
		reply.hijack = () => {
			state.hijacked = true;
			giveUps.get(request)?.();
			const captured = captureNodeResponse(reply.raw);
			captured.answer.then(answer.resolve, answer.reject);
			outcome.then(verdict => {
				pending.delete(request);
				if (verdict.type === 'answer') captured.send(verdict.answer);
			}, (error: unknown) => {
				pending.delete(request);
				// Given up after a hang-up: the client is gone, and what the route still writes is dropped.
				if ((error as {name?: unknown} | null)?.name === 'AnswerAbandonedError') {
					captured.abandon();
					return;
				}

				captured.restore();
				reply.raw.writeHead(500).end();
			});
			return hijack();
		};

		return undefined;
	};

	const onSend = async (request: FastifyRequestLike, reply: FastifyReplyLike, payload: unknown) => {
		const refused = tooLarge.get(request);
		if (refused) {
			// Fastify's error handler wrote its own JSON: the 413 is the one sendonce documents.
			tooLarge.delete(request);
			setHeaders(reply, refused);
			return Buffer.from(refused.body);
		}

		const state = pending.get(request);
		if (!state) return payload;
		pending.delete(request);
		let body: Uint8Array;
		try {
			body = await payloadBytes(payload);
		} catch (error) {
			// A stream that failed: no answer to store, and the key is given up (the transaction rolled back).
			state.answer.reject(error);
			await state.outcome.catch(() => undefined);
			throw error;
		}

		state.answer.resolve({status: reply.statusCode, headers: headerList(reply.getHeaders()), body});
		const verdict = await state.outcome;
		if (verdict.type === 'answer') setHeaders(reply, verdict.answer);
		return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
	};

	// A request that ended without its answer through `onSend` or a hijacked reply (Fastify ended it
	// otherwise): the key is given up. A client that merely left is not this: the route goes on.
	const abandon = async (request: FastifyRequestLike) => {
		const state = pending.get(request);
		if (!state || state.hijacked) return;
		pending.delete(request);
		state.answer.reject(new Error('The request ended before its answer was sent'));
		await state.outcome.catch(() => undefined);
	};

	// The payload read here, bounded, and handed on to Fastify's parser as the same bytes. Read
	// from the request itself, its bytes are put back into it too: a plugin that reads
	// `request.raw` instead of the parsed body (@fastify/multipart) finds the body whole.
	const preParsing = async (request: FastifyRequestLike, _reply: FastifyReplyLike, payload: AsyncIterable<Buffer | string>) => {
		if (!keyed(request)) return payload;
		let bytes: Uint8Array;
		try {
			bytes = payload === request.raw ? await readNodeBody(request.raw, settings.maxBody, {keep: true}) : await readPayload(payload, settings.maxBody);
		} catch (error) {
			if (!isBodyTooLarge(error)) throw error;
			tooLarge.set(request, problem(413, 'Request body too large', `A request with an idempotency key may carry at most ${settings.maxBody} bytes here.`, [['connection', 'close'], ...corsOf(request)]));
			throw tooLargeError(error);
		}

		bodies.set(request, bytes);
		// A Buffer, not the Uint8Array of several chunks: Fastify's parsers add chunks to a string, and a Uint8Array reads "123,34,…".
		return Readable.from([Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)]);
	};

	// A route declared after the plugin claims in its own last `preHandler`: after the route's
	// authentication (@fastify/auth's place), so that `scope` reads the user and a request the
	// route refuses never claims. A route declared before it claims in the context's `preHandler`.
	const claimsInRoute = Symbol('sendonce claims in the route');
	const onRoute = (route: {preHandler?: unknown; config?: Record<PropertyKey, unknown>}) => {
		const own = route.preHandler === undefined ? [] : Array.isArray(route.preHandler) ? route.preHandler : [route.preHandler];
		route.preHandler = [...own, preHandler];
		route.config = {...route.config, [claimsInRoute]: true};
	};

	// Named, so that it can be found in a route's hooks (Fastify binds them: `bound sendonceClaim`).
	const contextPreHandler = async function sendonceClaim(request: FastifyRequestLike, reply: FastifyReplyLike) {
		if (request.routeOptions?.config?.[claimsInRoute] === true) return undefined;
		// A route declared before the plugin was loaded (`register` not awaited) with preHandlers that
		// run after this one: claiming now would read `scope` before their authentication, and store
		// the answer of a request they refuse. Refused, loudly, instead.
		const later = keyed(request) ? hooksAfterClaim(request) : 0;
		if (later > 0) {
			throw new TypeError(`fastifyIdempotency(): the route ${request.method} ${request.url} has ${later} preHandler hook(s) that would run after its key is claimed, because it was declared before the plugin was loaded: \`await app.register(plugin)\` before declaring routes, so that the key is claimed after the route's own hooks (its authentication)`);
		}

		return preHandler(request, reply);
	};

	const plugin = (instance: FastifyInstanceLike, _options: unknown, done: (error?: Error) => void) => {
		listenToHandlers();
		instance.addHook('onRoute', onRoute);
		instance.addHook('onRequest', onRequest);
		instance.addHook('preParsing', preParsing);
		instance.addHook('preHandler', contextPreHandler);
		instance.addHook('onSend', onSend);
		instance.addHook('onResponse', abandon);
		done();
	};

	return Object.assign(plugin, {
		// Fastify's `fastify-plugin` convention: the hooks apply to the context the plugin is registered in, not to a child of it.
		[Symbol.for('skip-override')]: true,
		[Symbol.for('fastify.display-name')]: 'sendonce',
		context(request: object) {
			const ctx = contexts.get(request);
			if (!ctx) throw new TypeError('Expected a request that went through this plugin: context(request) is for the routes it is registered for');
			return ctx as StoreContext<Store, Required>;
		},
	});
}
