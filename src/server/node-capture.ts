import {EventEmitter} from 'node:events';
import {STATUS_CODES, type ServerResponse} from 'node:http';
import {brotliDecompressSync, gunzipSync, inflateSync} from 'node:zlib';
import {groupHeaders, headerList, NULL_BODY_STATUSES, type Answer} from './exchange.js';
import {ClientHangUp, type HangUp} from './hang-up.js';

/** A Node response whose route's writes are held back: its answer, and what to do with the response once it is stored. */
export interface Captured {
	/** The route's answer once it has ended, whether or not the client is still there; rejects when the route destroyed its response instead. */
	answer: Promise<Answer>;
	/** Sends `answer` for real: its status, exactly its headers, its body. */
	send(answer: Answer): void;
	/** Gives the response back as it was (nothing sent), for an error handler to answer. */
	restore(): void;
	/** The claim was given up and the client is gone: the response is given back, and whatever the route still writes is dropped. */
	abandon(): void;
}

/** The hang-up of each response that was asked for one. */
const hangUps = new WeakMap<ServerResponse, ClientHangUp>();
/** Responses whose client left: seen by a capture, which reads the response as open meanwhile. */
const gone = new WeakSet<ServerResponse>();
/** Responses being captured: the capture tells their hang-up, instead of a listener. */
const capturing = new WeakSet<ServerResponse>();

/**
 * Aborts when `response`'s client hangs up before its answer was sent (its socket closed first),
 * as jshttp/on-finished tells it: at once when that already happened.
 */
export function hangUpSignal(response: ServerResponse): HangUp {
	let hangUp = hangUps.get(response);
	if (hangUp) return hangUp;
	hangUp = new ClientHangUp();
	hangUps.set(response, hangUp);
	if (response.destroyed || gone.has(response)) hangUp.abort();
	else if (!capturing.has(response)) {
		const told = hangUp;
		response.once('close', () => {
			if (!response.writableFinished) told.abort();
		});
	}

	return hangUp;
}

type Socket = NonNullable<ServerResponse['socket']>;

/**
 * What the route is given as the response's socket while its answer is captured: one that stays
 * open, so that a helper that watches the socket (on-finished, under Express's `res.sendFile` and
 * `res.download`) finishes the answer instead of giving it up when the client leaves. What it
 * does not hold back (a timeout, a destroy, where the request came from) is the real socket's.
 * A class, so that a capture costs one small object.
 */
class StandInSocket extends EventEmitter {
	writable = true;
	destroyed = false;
	constructor(public real: Socket | null) {
		super();
	}

	cork(): void {}
	uncork(): void {}
	setTimeout(ms: number, callback?: () => void): this {
		this.real?.setTimeout(ms, callback);
		return this;
	}

	setNoDelay(noDelay?: boolean): this {
		this.real?.setNoDelay(noDelay);
		return this;
	}

	setKeepAlive(enable?: boolean, delay?: number): this {
		this.real?.setKeepAlive(enable, delay);
		return this;
	}

	destroy(error?: Error): this {
		this.real?.destroy(error);
		return this;
	}

	get remoteAddress() {
		return this.real?.remoteAddress;
	}

	get remotePort() {
		return this.real?.remotePort;
	}

	get remoteFamily() {
		return this.real?.remoteFamily;
	}

	get localAddress() {
		return this.real?.localAddress;
	}

	get localPort() {
		return this.real?.localPort;
	}

	get encrypted() {
		return (this.real as {encrypted?: boolean} | null)?.encrypted;
	}
}

const toBuffer = (chunk: unknown, encoding?: unknown): Uint8Array => {
	if (typeof chunk === 'string') return Buffer.from(chunk, typeof encoding === 'string' ? encoding as BufferEncoding : 'utf8');
	// Bytes as they are (a view, not a copy): Node keeps a written chunk as it is too.
	if (chunk instanceof Uint8Array) return chunk;
	return Buffer.from(chunk as ArrayLike<number>);
};

const callbackOf = (...items: unknown[]) => items.find(item => typeof item === 'function') as (() => void) | undefined;

/**
 * Captures what a route writes to a Node response instead of sending it, so that the answer is
 * stored (or committed) before it goes out. Once the route has ended its answer, whatever it (or
 * an error handler after it) writes is dropped, as if the answer were sent, until `send` sends it.
 *
 * While captured, the response is detached from its client: a client that hangs up changes
 * nothing for the route (its `close`, its `destroyed` and its socket's end are held back until
 * the answer is sent or given back), so that a file, a stream or a redirect after a hang-up still
 * ends its answer, which is stored for the retry. The hang-up itself goes to `hangUpSignal`. A
 * route that destroys its response (a failed `pipeline`) gives no answer: `answer` rejects. Only
 * the response's own fields are written, never redefined, so that Node's code keeps one shape of
 * response (an accessor made every response slower).
 */
export function captureNodeResponse(response: ServerResponse): Captured {
	const chunks: Uint8Array[] = [];
	const original = {writeHead: response.writeHead, write: response.write, end: response.end, flushHeaders: response.flushHeaders, emit: response.emit, destroy: response.destroy};
	let ended = false;
	let detached = true;
	let closed = false;
	let destroyedBy: Error | undefined;
	const fields = response as unknown as {destroyed: boolean; _closed: boolean; socket: Socket | null};
	// The real socket, and what Node set when it closed: given back with the response.
	const standIn = new StandInSocket(fields.socket);
	let real = {destroyed: fields.destroyed, closed: fields._closed};
	if (real.destroyed) gone.add(response);
	capturing.add(response);
	fields.socket = standIn as unknown as Socket;
	fields.destroyed = false;
	fields._closed = false;
	response.emit = function (this: ServerResponse, event: string | symbol, ...args: unknown[]) {
		if (detached && event === 'close') {
			// Node set `destroyed` and `_closed` just before: kept for later, read as open meanwhile.
			closed = true;
			real = {destroyed: fields.destroyed || real.destroyed, closed: fields._closed || real.closed};
			fields.destroyed = false;
			fields._closed = false;
			gone.add(response);
			hangUps.get(response)?.abort();
			return true;
		}

		// A pipelined request's response gets its socket once the one before it has finished.
		if (detached && event === 'socket') {
			standIn.real = args[0] as Socket;
			fields.socket = standIn as unknown as Socket;
		}

		return original.emit.call(this, event, ...args);
	} as ServerResponse['emit'];
	let settle!: (answer: Answer) => void;
	let fail!: (error: Error) => void;
	// A client that leaves before the route has answered changes nothing: the route's work goes on,
	// and its answer is stored for the retry, as a Fetch or node:http handler's is.
	const answer = new Promise<Answer>((resolve, reject) => {
		settle = resolve;
		fail = reject;
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
		settle(identity({status: response.statusCode, statusText: response.statusMessage, headers: headerList(response.getHeaders()), body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)}));
		return this;
	} as ServerResponse['end'];
	response.flushHeaders = () => undefined;
	response.destroy = function (this: ServerResponse, error?: Error) {
		// Before its answer ended, the route gives it up: no answer, as a throw; the response is destroyed once given back.
		if (!ended) {
			ended = true;
			destroyedBy = error ?? new Error('The route destroyed its response before it answered');
			fail(destroyedBy);
		}

		return this;
	} as ServerResponse['destroy'];

	const giveBack = ({writes}: {writes: boolean}) => {
		if (!detached) return;
		detached = false;
		capturing.delete(response);
		const {writeHead, write, end, flushHeaders, ...rest} = original;
		Object.assign(response, writes ? original : rest);
		fields.socket = standIn.real;
		fields.destroyed ||= real.destroyed;
		fields._closed ||= real.closed;
		// What was held back reaches its listeners now: the answer was stored, and the client is gone.
		if (closed) {
			standIn.writable = false;
			standIn.emit('close');
			response.emit('close');
		}

		if (destroyedBy) original.destroy.call(response);
	};

	return {
		answer,
		restore() {
			giveBack({writes: true});
		},
		abandon() {
			ended = true;
			giveBack({writes: false});
		},
		send(sent) {
			giveBack({writes: true});
			// Exactly the answer's headers: an error handler after the route may have set its own meanwhile.
			for (const name of response.getHeaderNames()) response.removeHeader(name);
			writeAnswer(response, sent);
		},
	};
}

const DECODERS: Record<string, (bytes: Uint8Array) => Uint8Array> = {gzip: gunzipSync, 'x-gzip': gunzipSync, deflate: inflateSync, br: brotliDecompressSync};

/**
 * The answer in the identity encoding: a body a compression middleware after sendonce's encoded
 * for the first client (`Content-Encoding`) is decoded, so that a replay suits a client that sent
 * another `Accept-Encoding`, or none. The first client gets it as stored, uncompressed.
 */
function identity(answer: Answer): Answer {
	const encoding = answer.headers.find(([name]) => name === 'content-encoding')?.[1].trim().toLowerCase();
	const decode = encoding === undefined ? undefined : DECODERS[encoding];
	if (!decode || answer.body.byteLength === 0) return answer;
	let body: Uint8Array;
	try {
		body = decode(answer.body);
	} catch {
		// Not what its header says: kept as it came.
		return answer;
	}

	return {...answer, headers: answer.headers.filter(([name]) => name !== 'content-encoding' && name !== 'content-length'), body};
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
