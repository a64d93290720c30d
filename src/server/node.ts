import type {IncomingMessage, ServerResponse} from 'node:http';
import {bodyOf, rememberBodySource} from './idempotency.js';
import {readNodeBody} from './read-body.js';
import {optionsObject, refuseUnknown} from './unknown-options.js';

/** A request as `node:http` (and Express) hands it over. */
export type NodeRequest = IncomingMessage & {originalUrl?: string};

/**
 * The Fetch `Request` for a Node request. Its body is read only when someone asks for it: the
 * handler, or `idempotency()`, which reads it bounded by `maxBody` (and the handler then gets
 * the same bytes).
 */
export function toRequest(request: NodeRequest): Request {
	const encrypted = (request.socket as {encrypted?: boolean} | null)?.encrypted === true;
	const url = new URL(request.originalUrl ?? request.url ?? '/', `${encrypted ? 'https' : 'http'}://${request.headers.host ?? 'localhost'}`);
	const headers = new Headers();
	for (let index = 0; index + 1 < request.rawHeaders.length; index += 2) headers.append(request.rawHeaders[index]!, request.rawHeaders[index + 1]!);
	const method = request.method ?? 'GET';
	if (method === 'GET' || method === 'HEAD') return new Request(url, {method, headers});

	let read: Promise<Uint8Array> | undefined;
	const source = async (limit: number) => (read ??= readNodeBody(request, limit));
	// highWaterMark 0: nothing is pulled before a reader asks, so the first to ask sets the bound.
	const body = new ReadableStream<Uint8Array>({
		async pull(controller) {
			const bytes = await source(Number.POSITIVE_INFINITY);
			if (bytes.length > 0) controller.enqueue(bytes);
			controller.close();
		},
	}, {highWaterMark: 0});
	const fetchRequest = new Request(url, {method, headers, body, duplex: 'half'} as RequestInit);
	rememberBodySource(fetchRequest, source);
	return fetchRequest;
}

/** Writes a Fetch `Response` to a Node response, streaming its body. */
export async function sendResponse(response: Response, target: ServerResponse): Promise<void> {
	target.statusCode = response.status;
	if (response.statusText) target.statusMessage = response.statusText;
	for (const [name, value] of response.headers) if (name !== 'set-cookie') target.setHeader(name, value);
	const cookies = response.headers.getSetCookie();
	if (cookies.length > 0) target.setHeader('set-cookie', cookies);
	// An answer idempotency() holds in full (stored, replayed, refused): written in one piece, its stream left unread.
	const whole = bodyOf(response);
	if (whole) {
		if (!target.destroyed) target.end(Buffer.from(whole.buffer, whole.byteOffset, whole.byteLength));
		return;
	}

	if (!response.body) {
		target.end();
		return;
	}

	for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
		if (!target.write(chunk)) await drained(target);
		// The client is gone: leaving the loop cancels the body, and its buffers go with it.
		if (target.destroyed) return;
	}

	target.end();
}

/** Resolves when `target` can take more, or has closed (a client that stopped reading and left). */
async function drained(target: ServerResponse): Promise<void> {
	await new Promise<void>(resolve => {
		const done = () => {
			target.off('drain', done);
			target.off('close', done);
			resolve();
		};

		target.on('drain', done);
		target.on('close', done);
	});
}

const KNOWN = new Set(['onError']);

/**
 * Serves a Fetch-standard handler (such as one wrapped by `idempotency()`) from `node:http`.
 * A handler that throws is answered 500 and reported to `onError`.
 *
 * @example
 * import {createServer} from 'node:http';
 * import {idempotency, toNodeHandler} from 'sendonce/server';
 *
 * const once = idempotency();
 * createServer(toNodeHandler(once(async () => Response.json({ok: true}, {status: 201})))).listen(3000);
 */
export function toNodeHandler(
	handler: (request: Request) => Response | Promise<Response>,
	options: {onError?: (error: unknown) => void} = {},
): (request: IncomingMessage, response: ServerResponse) => Promise<void> {
	if (typeof handler !== 'function') throw new TypeError(`Expected \`handler\` to be a function, got ${handler === null ? 'null' : typeof handler}`);
	refuseUnknown(optionsObject(options), KNOWN);
	const {onError = (error: unknown) => console.error('sendonce/server: the handler threw', error)} = options;
	if (typeof onError !== 'function') throw new TypeError(`Expected \`onError\` to be a function, got ${typeof onError}`);
	return async (request, response) => {
		try {
			await sendResponse(await handler(toRequest(request)), response);
		} catch (error) {
			onError(error);
			if (!response.headersSent) {
				response.writeHead(500, {'content-type': 'text/plain; charset=utf-8'});
				response.end('Internal Server Error');
			} else {
				response.destroy();
			}
		}
	};
}
