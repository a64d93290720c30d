import type {IncomingMessage, ServerResponse} from 'node:http';
import {joinHeader, type HeaderList, type Incoming} from './exchange.js';
import {honour, type HandlerContext} from './honour.js';
import type {StoreContext} from './idempotency.js';
import type {KeyStore} from './key-store.js';
import {unkeyedLeaseContext} from './lease-flow.js';
import {captureNodeResponse, hangUpSignal, writeAnswer, type Captured} from './node-capture.js';
import type {NodeRequest} from './node.js';
import {normalizeOptions, type AnyKeyStore, type IdempotencyOptions} from './options.js';
import {readNodeBody} from './read-body.js';

/**
 * A request as Express hands it over: `body` is set when a body parser ran.
 *
 * @example
 * import type {ExpressRequestLike} from 'sendonce/server';
 *
 * const userOf = (req: ExpressRequestLike) => String(req.headers['x-user-id']);
 */
export type ExpressRequestLike = NodeRequest & {body?: unknown; rawBody?: unknown};

/**
 * A response as Express hands it over: the key goes to `res.locals.idempotencyKey`, the whole
 * context (`fence`, `signal`, or `tx`) to `res.locals.idempotency`.
 *
 * @example
 * import type {ExpressResponseLike} from 'sendonce/server';
 *
 * const keyOf = (res: ExpressResponseLike) => res.locals?.idempotencyKey as string | undefined;
 */
export type ExpressResponseLike = ServerResponse & {locals?: Record<string, unknown>};

/**
 * `IdempotencyOptions`, with `scope` reading the Express request (where `req.user` lives).
 *
 * @example
 * import type {ExpressIdempotencyOptions} from 'sendonce/server';
 *
 * const options: ExpressIdempotencyOptions = {scope: req => String((req as {user?: {id: string}}).user?.id)};
 */
export type ExpressIdempotencyOptions<Required extends boolean = boolean, Store extends AnyKeyStore = AnyKeyStore> = Omit<IdempotencyOptions<Required, Store>, 'scope'> & {
	scope?: (request: ExpressRequestLike) => string | Promise<string>;
};

/**
 * The middleware `expressIdempotency()` returns. `context(res)` is what the route is given besides
 * `req`: the key, and the fence and signal (lease store) or the transaction (transactional store).
 *
 * @example
 * import {expressIdempotency, type ExpressIdempotency} from 'sendonce/server';
 *
 * const once: ExpressIdempotency<true> = expressIdempotency({required: true});
 */
export interface ExpressIdempotency<Required extends boolean = boolean, Store extends AnyKeyStore = KeyStore> {
	(request: IncomingMessage, response: ServerResponse, next: (error?: unknown) => void): void;
	/** The context of the request `response` answers, typed by the store. */
	context(response: ServerResponse): StoreContext<Store, Required>;
}

type Next = (error?: unknown) => void;

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json/i;

function expressIncoming(request: ExpressRequestLike, response: ServerResponse): Incoming<ExpressRequestLike> {
	return {
		method: (request.method ?? 'GET').toUpperCase(),
		target: request.originalUrl ?? request.url ?? '/',
		header: name => joinHeader(request.headers[name]),
		async body(limit) {
			// A body parser before this middleware read the stream: the bytes its `verify` kept
			// (`req.rawBody`, by convention), else what it made of them is the body.
			if (request.readableEnded) {
				if (request.rawBody instanceof Uint8Array) return {bytes: request.rawBody};
				if (request.body === undefined) {
					throw new TypeError('Expected `req.body` after the request body was read: a middleware before expressIdempotency() read it and left nothing to fingerprint; put expressIdempotency() before it, or after a body parser');
				}

				return {value: request.body};
			}

			// No parser yet: read the bytes and put them back, so that a parser after this one reads them as usual.
			const bytes = await readNodeBody(request, limit, {keep: true});
			if (request.body === undefined || isEmptyObject(request.body)) request.body = parsed(request, bytes);
			return {bytes};
		},
		native: request,
		get hangUp() {
			return hangUpSignal(response);
		},
	};
}

function isEmptyObject(value: unknown): boolean {
	return typeof value === 'object' && value !== null && !Buffer.isBuffer(value) && Object.keys(value).length === 0;
}

/** What the route finds in `req.body` when no parser comes after this middleware: parsed JSON for a JSON type, else a Buffer. */
function parsed(request: IncomingMessage, bytes: Uint8Array): unknown {
	const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
	if (!JSON_TYPE.test(request.headers['content-type'] ?? '') || buffer.length === 0) return buffer;
	try {
		return JSON.parse(buffer.toString('utf8')) as unknown;
	} catch {
		return buffer;
	}
}

function addHeaders(response: ServerResponse, headers: HeaderList): void {
	for (const [name, value] of headers) {
		if (name === 'vary') response.appendHeader(name, value);
		else response.setHeader(name, value);
	}
}

function setContext(response: ExpressResponseLike, ctx: HandlerContext): void {
	if (!response.locals) return;
	response.locals.idempotencyKey = ctx.key;
	response.locals.idempotency = ctx;
}

/**
 * Express middleware (Express 4 and 5) that honours idempotency keys for the route after it, as
 * `idempotency()` does for a Fetch handler. A body parser may come before it (`express.json()`,
 * `.raw()`, `.text()`, `.urlencoded()`: it fingerprints what the parser made of the body) or
 * after it (it reads the bytes, at most `maxBody`, and puts them back for the parser); without
 * one, `req.body` is the parsed JSON, else a Buffer. The route finds the key in
 * `res.locals.idempotencyKey`, and everything it is given in `once.context(res)`.
 *
 * @example
 * import express from 'express';
 * import {expressIdempotency} from 'sendonce/server';
 *
 * const app = express();
 * const once = expressIdempotency({required: true});
 * app.post('/orders', express.json(), once, (req, res) => {
 * 	res.status(201).json({id: 1, key: once.context(res).key});
 * });
 */
export function expressIdempotency<Required extends boolean = false, Store extends AnyKeyStore = KeyStore>(options?: ExpressIdempotencyOptions<Required, Store>): ExpressIdempotency<Required, Store> {
	const settings = normalizeOptions(options);
	const contexts = new WeakMap<ServerResponse, HandlerContext>();

	const middleware = (request: IncomingMessage, response: ServerResponse, next: Next) => {
		const remember = (ctx: HandlerContext) => {
			contexts.set(response, ctx);
			setContext(response, ctx);
		};

		let captured: Captured | undefined;
		const run = async () => {
			const verdict = await honour(settings, expressIncoming(request as ExpressRequestLike, response), async ctx => {
				remember(ctx);
				captured = captureNodeResponse(response);
				next();
				return captured.answer;
			});
			if (verdict.type === 'pass') {
				addHeaders(response, verdict.headers);
				remember(unkeyedLeaseContext());
				next();
				return;
			}

			if (captured) captured.send(verdict.answer);
			else writeAnswer(response, verdict.answer);
		};

		run().catch((error: unknown) => {
			// The client is gone and the claim was given up: no one to answer, and the route may still be
			// writing (an error handler beside it would answer twice). What it writes is dropped.
			if ((error as {name?: unknown} | null)?.name === 'AnswerAbandonedError') {
				captured?.abandon();
				return;
			}

			// Nothing was sent: the error handler answers (the key was given up, or the transaction rolled back).
			captured?.restore();
			next(error);
		});
	};

	return Object.assign(middleware, {
		context(response: ServerResponse) {
			const ctx = contexts.get(response);
			if (!ctx) throw new TypeError('Expected a response that went through this middleware: context(res) is for the route after it');
			return ctx as StoreContext<Store, Required>;
		},
	});
}
