import type {IncomingHttpHeaders, ServerResponse} from 'node:http';
import {tracingChannel} from 'node:diagnostics_channel';
import {Readable} from 'node:stream';
import {headerList, joinHeader, groupHeaders, NULL_BODY_STATUSES, type Answer, type Incoming} from './exchange.js';
import {corsHeaders} from './cors.js';
import {honour, type HandlerContext, type Verdict} from './honour.js';
import type {StoreContext} from './idempotency.js';
import type {KeyStore} from './key-store.js';
import {unkeyedLeaseContext} from './lease-flow.js';
import {normalizeOptions, type AnyKeyStore, type IdempotencyOptions} from './options.js';
import {captureNodeResponse, hangUpSignal} from './node-capture.js';
import {problem} from './problem.js';
import {readStream} from './read-body.js';

/** A Fastify request, as far as the plugin reads it. */
interface FastifyRequestLike {
	method: string;
	url: string;
	headers: IncomingHttpHeaders;
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
	reply: FastifyReplyLike;
}

/** The requests whose route runs with a claim, for the handler channel to find. */
const running = new WeakMap<object, Pending>();

/**
 * Fastify tells through its `fastify.request.handler` tracing channel when an async route's
 * promise settled, just after it sent (or did not send) what the route returned. A route whose
 * client hung up that returned nothing is sent nothing, so no hook runs: its answer is what it
 * set (status, headers) with no body, and its claim ends with it instead of with the process.
 */
let listening = false;
function listenToHandlers(): void {
	if (listening) return;
	listening = true;
	const ignore = () => undefined;
	tracingChannel('fastify.request.handler').subscribe({
		start: ignore,
		end: ignore,
		asyncStart: ignore,
		error: ignore,
		asyncEnd(message) {
			const state = running.get((message as {request: object}).request);
			// Sent nothing because the client is gone: a route that ended the raw response itself is `onResponse`'s.
			if (!state || state.sent || state.hijacked || state.reply.raw.writableEnded) return;
			running.delete((message as {request: object}).request);
			const {reply} = state;
			state.answer.resolve({status: reply.statusCode, headers: headerList(reply.getHeaders()), body: new Uint8Array(0)});
		},
	});
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
			return hangUpSignal(reply.raw);
		},
	};
}

/** Reads a request's payload stream to its end, at most `limit` bytes. */
async function readPayload(payload: AsyncIterable<Buffer | string>, limit: number): Promise<Buffer> {
	const chunks: Buffer[] = [];
	let total = 0;
	for await (const chunk of payload) {
		const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
		total += bytes.length;
		if (total > limit) throw Object.assign(new Error(`A request with an idempotency key may carry at most ${limit} bytes here`), {statusCode: 413});
		chunks.push(bytes);
	}

	return Buffer.concat(chunks);
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

	const onRequest = async (request: FastifyRequestLike, reply: FastifyReplyLike) => {
		if (!keyed(request)) return undefined;
		if (Number(request.headers['content-length']) > settings.maxBody) {
			const cors = settings.cors ? corsHeaders(settings.cors, joinHeader(request.headers.origin)) : [];
			return send(reply, problem(413, 'Request body too large', `A request with an idempotency key may carry at most ${settings.maxBody} bytes here.`, [['connection', 'close'], ...cors]));
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
		const state: Pending = {answer, outcome, hijacked: false, sent: false, reply};
		pending.set(request, state);
		running.set(request, state);
		const sendNow = reply.send;
		reply.send = function (this: FastifyReplyLike, payload?: unknown) {
			state.sent = true;
			running.delete(request);
			reply.send = sendNow;
			return sendNow.call(this, payload);
		};
		// A route that answers itself (server-sent bytes, a proxied answer) skips onSend: capture its writes instead.
		const hijack = reply.hijack.bind(reply);
		reply.hijack = () => {
			state.hijacked = true;
			const captured = captureNodeResponse(reply.raw);
			captured.answer.then(answer.resolve, answer.reject);
			outcome.then(verdict => {
				pending.delete(request);
				if (verdict.type === 'answer') captured.send(verdict.answer);
			}, () => {
				pending.delete(request);
				captured.restore();
				reply.raw.writeHead(500).end();
			});
			return hijack();
		};

		return undefined;
	};

	const onSend = async (request: FastifyRequestLike, reply: FastifyReplyLike, payload: unknown) => {
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

	// The payload read here, bounded, and handed on to Fastify's parser as the same bytes.
	const preParsing = async (request: FastifyRequestLike, _reply: FastifyReplyLike, payload: AsyncIterable<Buffer | string>) => {
		if (!keyed(request)) return payload;
		const bytes = await readPayload(payload, settings.maxBody);
		bodies.set(request, bytes);
		return Readable.from([bytes]);
	};

	const plugin = (instance: FastifyInstanceLike, _options: unknown, done: (error?: Error) => void) => {
		listenToHandlers();
		instance.addHook('onRequest', onRequest);
		instance.addHook('preParsing', preParsing);
		instance.addHook('preHandler', preHandler);
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
