import type {IncomingMessage, ServerResponse} from 'node:http';
import {canonicalJson} from '../core/serialize.js';
import {idempotency} from './idempotency.js';
import {readBody, sendResponse, toRequest, type NodeRequest} from './node.js';
import type {IdempotencyOptions} from './options.js';

/**
 * A request as Express hands it over: `body` is set when a body parser ran.
 *
 * @example
 * import type {ExpressRequestLike} from 'sendonce/server';
 *
 * const userOf = (req: ExpressRequestLike) => String(req.headers['x-user-id']);
 */
export type ExpressRequestLike = NodeRequest & {body?: unknown; _body?: boolean};

/**
 * A response as Express hands it over: the key goes to `res.locals.idempotencyKey`.
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
export type ExpressIdempotencyOptions<Required extends boolean = boolean> = Omit<IdempotencyOptions<Required>, 'scope'> & {
	scope?: (request: ExpressRequestLike) => string | Promise<string>;
};

type Next = (error?: unknown) => void;

interface Pending {
	request: ExpressRequestLike;
	response: ExpressResponseLike;
	next: Next;
}

/** The bytes to fingerprint: what a body parser made of the body, or the body itself (then parsed for the route). */
async function bodyBytes(request: ExpressRequestLike): Promise<Uint8Array | undefined> {
	if (request._body === true) {
		const {body} = request;
		if (Buffer.isBuffer(body)) return body;
		if (typeof body === 'string') return Buffer.from(body);
		return Buffer.from(canonicalJson(body ?? null));
	}

	if (request.readableEnded) return undefined;
	const bytes = await readBody(request);
	// The stream is spent: hand the route what a body parser would have, and tell parsers after this one.
	if (/^application\/(?:[\w.+-]+\+)?json/i.test(request.headers['content-type'] ?? '') && bytes.length > 0) {
		try {
			request.body = JSON.parse(bytes.toString('utf8')) as unknown;
		} catch {
			request.body = bytes;
		}
	} else {
		request.body = bytes;
	}

	request._body = true;
	return bytes;
}

/**
 * Lets the route after this middleware answer, and captures what it writes as a Fetch
 * `Response` instead of sending it, so that `idempotency()` can store it before it goes out.
 */
function capture({response, next}: Pending): Promise<Response> {
	return new Promise(resolve => {
		const chunks: Buffer[] = [];
		const original = {writeHead: response.writeHead, write: response.write, end: response.end};
		const toBuffer = (chunk: unknown, encoding?: unknown) =>
			(typeof chunk === 'string' ? Buffer.from(chunk, typeof encoding === 'string' ? encoding as BufferEncoding : 'utf8') : Buffer.from(chunk as Uint8Array));

		response.writeHead = function (this: ServerResponse, status: number, ...rest: unknown[]) {
			response.statusCode = status;
			if (typeof rest[0] === 'string') response.statusMessage = rest[0];
			const headers = rest.find(item => typeof item === 'object' && item !== null) as Record<string, string | string[]> | undefined;
			for (const [name, value] of Object.entries(headers ?? {})) response.setHeader(name, value);
			return this;
		} as ServerResponse['writeHead'];
		response.write = function (chunk: unknown, encoding?: unknown, callback?: unknown) {
			chunks.push(toBuffer(chunk, encoding));
			const done = [encoding, callback].find(item => typeof item === 'function') as (() => void) | undefined;
			done?.();
			return true;
		} as ServerResponse['write'];
		response.end = function (this: ServerResponse, chunk?: unknown, encoding?: unknown, callback?: unknown) {
			if (chunk !== undefined && chunk !== null && typeof chunk !== 'function') chunks.push(toBuffer(chunk, encoding));
			Object.assign(response, original);
			const headers = new Headers();
			for (const [name, value] of Object.entries(response.getHeaders())) {
				if (value === undefined) continue;
				for (const item of Array.isArray(value) ? value : [value]) headers.append(name, String(item));
			}

			const done = [chunk, encoding, callback].find(item => typeof item === 'function') as (() => void) | undefined;
			const body = Buffer.concat(chunks);
			const status = response.statusCode;
			resolve(new Response([101, 103, 204, 205, 304].includes(status) ? null : body, {status, statusText: response.statusMessage, headers}));
			done?.();
			return this;
		} as ServerResponse['end'];
		next();
	});
}

/**
 * Express middleware that honours idempotency keys for the route after it, as
 * `idempotency()` does for a Fetch handler. Put it after your body parser (`express.json()`);
 * without one it reads the body itself and sets `req.body` (parsed JSON, else a Buffer). The
 * route finds the key in `res.locals.idempotencyKey`.
 *
 * @example
 * import express from 'express';
 * import {expressIdempotency} from 'sendonce/server';
 *
 * const app = express();
 * app.post('/orders', express.json(), expressIdempotency({required: true}), (req, res) => {
 * 	res.status(201).json({id: 1, key: res.locals.idempotencyKey});
 * });
 */
export function expressIdempotency<Required extends boolean = false>(options?: ExpressIdempotencyOptions<Required>): (request: IncomingMessage, response: ServerResponse, next: Next) => void {
	const pending = new WeakMap<Request, Pending>();
	const {scope, ...rest} = options ?? {};
	if (scope !== undefined && typeof scope !== 'function') throw new TypeError(`Expected \`scope\` to be a function of the request, got ${typeof scope}`);
	const once = idempotency<Required>({
		...rest,
		...(scope ? {scope: (request: Request) => scope(pending.get(request)!.request)} : {}),
	} as IdempotencyOptions<Required>);
	const handler = once(async (request, {key}) => {
		const context = pending.get(request)!;
		if (context.response.locals) context.response.locals.idempotencyKey = key;
		return capture(context);
	});

	return (request, response, next) => {
		const run = async () => {
			const body = await bodyBytes(request as ExpressRequestLike);
			const fetchRequest = toRequest(request, body);
			pending.set(fetchRequest, {request: request as ExpressRequestLike, response, next});
			await sendResponse(await handler(fetchRequest), response);
		};

		run().catch(next);
	};
}
