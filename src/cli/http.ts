import {request as httpRequest, type ClientRequest, type IncomingMessage} from 'node:http';
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

/** The most of an answer's body read: a probe compares bodies, it never needs a large one whole. */
const MAX_BODY = 1024 * 1024;

// A new connection per request (`agent: false`): concurrent probes really are concurrent, and
// a dropped connection takes no pooled neighbour with it.
function open(outgoing: Outgoing) {
	const url = new URL(outgoing.url);
	const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
	const headers = {...outgoing.headers, ...(outgoing.body === undefined ? {} : {'content-length': String(Buffer.byteLength(outgoing.body))})};
	return request(url, {method: outgoing.method, headers, agent: false});
}

/** The answer's headers, `Location` resolved against the request's URL (RFC 9110): a relative and an absolute one may name the same thing. */
function headersOf(response: IncomingMessage, url: string): Record<string, string> {
	const headers: Record<string, string> = {};
	for (const [name, value] of Object.entries(response.headers)) {
		if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
	}

	if (headers.location !== undefined && URL.canParse(headers.location, url)) headers.location = new URL(headers.location, url).href;
	return headers;
}

/**
 * Reads the answer to `request`, whole, within `timeout` ms of `started` (not only while the
 * socket is idle: a server that trickles a byte at a time is held to it too), and at most
 * `MAX_BODY` bytes of it.
 */
async function answerOf(request: ClientRequest, url: string, timeout: number, started: number): Promise<Answer> {
	return new Promise((resolve, reject) => {
		const timer = setTimeout(() => request.destroy(new Error(`no whole answer within ${timeout} ms`)), timeout - (performance.now() - started));
		const fail = (error: Error) => {
			clearTimeout(timer);
			reject(error);
		};

		request.once('error', fail);
		request.once('response', response => {
			const chunks: Buffer[] = [];
			let size = 0;
			response.on('data', (chunk: Buffer) => {
				size += chunk.length;
				if (size > MAX_BODY) request.destroy(new Error(`an answer of more than ${MAX_BODY} bytes`));
				else chunks.push(chunk);
			});
			response.once('error', fail);
			response.once('end', () => {
				clearTimeout(timer);
				resolve({status: response.statusCode ?? 0, headers: headersOf(response, url), body: Buffer.concat(chunks).toString('utf8'), ms: performance.now() - started});
			});
		});
	});
}

/** Sends `outgoing` and reads the whole answer; rejects on a network error or after `timeout` ms. */
export async function send(outgoing: Outgoing, timeout: number): Promise<Answer> {
	const started = performance.now();
	const request = open(outgoing);
	const answer = answerOf(request, outgoing.url, timeout, started);
	request.end(outgoing.body);
	return answer;
}

/**
 * Sends every request of `outgoing` so that they arrive together: each is written but its last
 * byte on its own connection, and once all are written, the last bytes go at once. Duplicates
 * that straggle in after the first has finished test nothing of its claim.
 */
export async function sendTogether(outgoing: readonly Outgoing[], timeout: number): Promise<Answer[]> {
	const started = performance.now();
	const requests = outgoing.map(item => ({item, request: open(item), bytes: Buffer.from(item.body ?? '')}));
	const answers = requests.map(({item, request}) => answerOf(request, item.url, timeout, started));
	// The answers' rejections are awaited below; until then, a failed write must not go unhandled.
	for (const answer of answers) answer.catch(() => undefined);
	await Promise.all(requests.map(async ({request, bytes}) => new Promise<void>(resolve => {
		if (bytes.length < 2) {
			resolve();
			return;
		}

		request.write(bytes.subarray(0, -1), () => resolve());
		request.once('error', () => resolve());
	})));
	for (const {request, bytes} of requests) request.end(bytes.length < 2 ? bytes : bytes.subarray(-1));
	return Promise.all(answers);
}

/**
 * Sends `outgoing` and drops the connection as soon as the request is written, before any
 * answer: the lost reply of a flaky network. Resolves once the socket is closed, at the latest
 * after `timeout` ms.
 */
export async function sendAndDrop(outgoing: Outgoing, timeout: number): Promise<void> {
	return new Promise((resolve, reject) => {
		const request = open(outgoing);
		const timer = setTimeout(() => request.destroy(), timeout);
		request.once('error', error => {
			// The drop itself surfaces as a reset; only an error before the request left counts.
			if (!request.writableFinished) reject(error);
		});
		request.once('close', () => {
			clearTimeout(timer);
			resolve();
		});
		// 'finish': the request is handed to the operating system in full.
		request.once('finish', () => request.destroy());
		request.end(outgoing.body);
	});
}
