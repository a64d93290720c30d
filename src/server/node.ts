import type {IncomingMessage, ServerResponse} from 'node:http';
import {rememberBody} from './known-body.js';

/** A request as `node:http` (and Express) hands it over. */
export type NodeRequest = IncomingMessage & {originalUrl?: string};

/** Reads a Node request's body to the end. */
export async function readBody(request: IncomingMessage): Promise<Buffer> {
	const chunks: Buffer[] = [];
	for await (const chunk of request) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk as Buffer);
	return Buffer.concat(chunks);
}

/** The Fetch `Request` for a Node request whose body has been read. */
export function toRequest(request: NodeRequest, body: Uint8Array | undefined): Request {
	const encrypted = (request.socket as {encrypted?: boolean} | null)?.encrypted === true;
	const url = new URL(request.originalUrl ?? request.url ?? '/', `${encrypted ? 'https' : 'http'}://${request.headers.host ?? 'localhost'}`);
	const headers = new Headers();
	for (let index = 0; index + 1 < request.rawHeaders.length; index += 2) headers.append(request.rawHeaders[index]!, request.rawHeaders[index + 1]!);
	const method = request.method ?? 'GET';
	const hasBody = method !== 'GET' && method !== 'HEAD' && body !== undefined && body.length > 0;
	const fetchRequest = new Request(url, {method, headers, ...(hasBody ? {body: body as Uint8Array<ArrayBuffer>} : {})});
	rememberBody(fetchRequest, hasBody ? body : new Uint8Array(0));
	return fetchRequest;
}

/** Writes a Fetch `Response` to a Node response, streaming its body. */
export async function sendResponse(response: Response, target: ServerResponse): Promise<void> {
	target.statusCode = response.status;
	if (response.statusText) target.statusMessage = response.statusText;
	for (const [name, value] of response.headers) if (name !== 'set-cookie') target.setHeader(name, value);
	const cookies = response.headers.getSetCookie();
	if (cookies.length > 0) target.setHeader('set-cookie', cookies);
	if (!response.body) {
		target.end();
		return;
	}

	for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
		if (!target.write(chunk)) await new Promise<void>(resolve => target.once('drain', resolve));
	}

	target.end();
}

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
	{onError = error => console.error('sendonce/server: the handler threw', error)}: {onError?: (error: unknown) => void} = {},
): (request: IncomingMessage, response: ServerResponse) => Promise<void> {
	if (typeof handler !== 'function') throw new TypeError(`Expected \`handler\` to be a function, got ${handler === null ? 'null' : typeof handler}`);
	return async (request, response) => {
		try {
			const method = request.method ?? 'GET';
			const body = method === 'GET' || method === 'HEAD' ? undefined : await readBody(request);
			await sendResponse(await handler(toRequest(request, body)), response);
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
