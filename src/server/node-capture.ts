import {STATUS_CODES, type ServerResponse} from 'node:http';
import {groupHeaders, headerList, NULL_BODY_STATUSES, type Answer} from './exchange.js';

/** A Node response whose route's writes are held back: its answer, and what to do with the response once it is stored. */
export interface Captured {
	/** The route's answer once it has ended, whether or not the client is still there. */
	answer: Promise<Answer>;
	/** Sends `answer` for real: its status, exactly its headers, its body. */
	send(answer: Answer): void;
	/** Gives the response back as it was (nothing sent), for an error handler to answer. */
	restore(): void;
}

const toBuffer = (chunk: unknown, encoding?: unknown) =>
	(typeof chunk === 'string' ? Buffer.from(chunk, typeof encoding === 'string' ? encoding as BufferEncoding : 'utf8') : Buffer.from(chunk as Uint8Array));
const callbackOf = (...items: unknown[]) => items.find(item => typeof item === 'function') as (() => void) | undefined;

/**
 * Captures what a route writes to a Node response instead of sending it, so that the answer is
 * stored (or committed) before it goes out. Once the route has ended its answer, whatever it (or
 * an error handler after it) writes is dropped, as if the answer were sent, until `send` sends it.
 */
export function captureNodeResponse(response: ServerResponse): Captured {
	const chunks: Buffer[] = [];
	const original = {writeHead: response.writeHead, write: response.write, end: response.end, flushHeaders: response.flushHeaders};
	let ended = false;
	let settle!: (answer: Answer) => void;
	// A client that leaves before the route has answered changes nothing: the route's work goes on,
	// and its answer is stored for the retry, as a Fetch or node:http handler's is.
	const answer = new Promise<Answer>(resolve => {
		settle = resolve;
	});
	response.writeHead = function (this: ServerResponse, status: number, ...rest: unknown[]) {
		if (ended) return this;
		response.statusCode = status;
		if (typeof rest[0] === 'string') response.statusMessage = rest[0];
		const headers = rest.find(item => typeof item === 'object' && item !== null) as Record<string, string | string[]> | string[] | undefined;
		if (Array.isArray(headers)) {
			for (let index = 0; index + 1 < headers.length; index += 2) response.appendHeader(headers[index]!, headers[index + 1]!);
		} else {
			for (const [name, value] of Object.entries(headers ?? {})) response.setHeader(name, value);
		}

		return this;
	} as ServerResponse['writeHead'];
	response.write = function (chunk: unknown, encoding?: unknown, callback?: unknown) {
		if (!ended) chunks.push(toBuffer(chunk, encoding));
		callbackOf(encoding, callback)?.();
		return true;
	} as ServerResponse['write'];
	response.end = function (this: ServerResponse, chunk?: unknown, encoding?: unknown, callback?: unknown) {
		const done = callbackOf(chunk, encoding, callback);
		if (ended) {
			done?.();
			return this;
		}

		if (chunk !== undefined && chunk !== null && typeof chunk !== 'function') chunks.push(toBuffer(chunk, encoding));
		ended = true;
		if (done) response.once('finish', done);
		settle({status: response.statusCode, statusText: response.statusMessage, headers: headerList(response.getHeaders()), body: Buffer.concat(chunks)});
		return this;
	} as ServerResponse['end'];
	response.flushHeaders = () => undefined;

	const restore = () => {
		Object.assign(response, original);
	};

	return {
		answer,
		restore,
		send(sent) {
			restore();
			// Exactly the answer's headers: an error handler after the route may have set its own meanwhile.
			for (const name of response.getHeaderNames()) response.removeHeader(name);
			writeAnswer(response, sent);
		},
	};
}

/** Sends an answer through a Node response: its status and headers (beside any already set), then its body. */
export function writeAnswer(response: ServerResponse, answer: Answer): void {
	if (response.writableEnded || response.destroyed) return;
	response.statusCode = answer.status;
	// The answer's own phrase, not one an error handler set meanwhile.
	response.statusMessage = answer.statusText || STATUS_CODES[answer.status] || '';
	for (const [name, value] of groupHeaders(answer.headers)) response.setHeader(name, value);
	response.end(NULL_BODY_STATUSES.has(answer.status) ? undefined : Buffer.from(answer.body.buffer, answer.body.byteOffset, answer.body.byteLength));
}
