import {request as httpRequest, type IncomingMessage} from 'node:http';
import {request as httpsRequest} from 'node:https';

/** One request a probe sends. */
export interface Outgoing {
	method: string;
	url: string;
	headers: Record<string, string>;
	body?: string;
}

/** What came back: the status, the headers (names in lower case), the body as text, and how long it took. */
export interface Answer {
	status: number;
	headers: Record<string, string>;
	body: string;
	ms: number;
}

// A new connection per request (`agent: false`): concurrent probes really are concurrent, and
// a dropped connection takes no pooled neighbour with it.
function open(outgoing: Outgoing) {
	const url = new URL(outgoing.url);
	const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
	const headers = {...outgoing.headers, ...(outgoing.body === undefined ? {} : {'content-length': String(Buffer.byteLength(outgoing.body))})};
	return request(url, {method: outgoing.method, headers, agent: false});
}

function headersOf(response: IncomingMessage): Record<string, string> {
	const headers: Record<string, string> = {};
	for (const [name, value] of Object.entries(response.headers)) {
		if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
	}

	return headers;
}

/** Sends `outgoing` and reads the whole answer; rejects on a network error or after `timeout` ms. */
export async function send(outgoing: Outgoing, timeout: number): Promise<Answer> {
	const started = performance.now();
	return new Promise((resolve, reject) => {
		const request = open(outgoing);
		request.setTimeout(timeout, () => request.destroy(new Error(`no answer within ${timeout} ms`)));
		request.once('error', reject);
		request.once('response', response => {
			const chunks: Buffer[] = [];
			response.on('data', (chunk: Buffer) => chunks.push(chunk));
			response.once('error', reject);
			response.once('end', () => {
				resolve({status: response.statusCode ?? 0, headers: headersOf(response), body: Buffer.concat(chunks).toString('utf8'), ms: performance.now() - started});
			});
		});
		request.end(outgoing.body);
	});
}

/**
 * Sends `outgoing` and drops the connection as soon as the request is written, before any
 * answer: the lost reply of a flaky network. Resolves once the socket is closed.
 */
export async function sendAndDrop(outgoing: Outgoing): Promise<void> {
	return new Promise((resolve, reject) => {
		const request = open(outgoing);
		request.once('error', error => {
			// The drop itself surfaces as a reset; only an error before the request left counts.
			if (!request.writableFinished) reject(error);
		});
		request.once('close', () => resolve());
		// 'finish': the request is handed to the operating system in full.
		request.once('finish', () => request.destroy());
		request.end(outgoing.body);
	});
}
