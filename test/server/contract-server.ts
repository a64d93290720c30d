import {createHash} from 'node:crypto';
import {createServer, type IncomingMessage, type Server, type ServerResponse} from 'node:http';
import type {AddressInfo} from 'node:net';

/**
 * What the server does to one request, besides honouring the contract:
 * - `lose-reply`: do the work, then drop the connection (the client sees a network error);
 * - `error-after`: do the work, then answer `status` (default 502), as a proxy might;
 * - `error-before`: answer `status` (default 503) without doing the work;
 * - `drop-before`: drop the connection without doing the work;
 * - `slow`: the work takes `ms` milliseconds (default 300);
 * - `rate-limit`: answer 429 with `Retry-After: seconds` (default 1) without doing the work.
 */
export type Fault =
	| {type: 'lose-reply'}
	| {type: 'error-after'; status?: number}
	| {type: 'error-before'; status?: number}
	| {type: 'drop-before'}
	| {type: 'slow'; ms?: number}
	| {type: 'rate-limit'; seconds?: number | string};

/** One request as the server saw it. */
export interface SeenRequest {
	method: string;
	path: string;
	key: string | undefined;
	headers: Record<string, string | string[] | undefined>;
	body: string;
	/** What the server answered, or 'dropped'. */
	outcome: number | 'dropped';
}

interface StoredAnswer {
	status: number;
	body: string;
}

interface KeyEntry {
	fingerprint: string;
	answer?: StoredAnswer;
}

export interface ContractServerOptions {
	/** The idempotency header to read. @default 'idempotency-key' */
	headerName?: string;
	/** Seconds a 409 asks the client to wait (`Retry-After`), when set. @default undefined */
	conflictRetryAfter?: number;
	/** How long the work takes when no fault says otherwise. @default 0 */
	workMs?: number;
	/**
	 * The work itself: what to answer for a body, done under `key` (undefined without one);
	 * undefined falls back to the default. @default 201 with `{id, order, effects}`
	 */
	work?: (body: unknown, key: string | undefined) => StoredAnswer | undefined;
	/** Decides a fault per request, after the queued ones run out. */
	faultFor?: (request: {key: string | undefined; path: string; index: number}) => Fault | undefined;
	/**
	 * Serves anything besides the idempotent API (pages, scripts, a control panel) from the
	 * same origin: return true when it answered the request.
	 */
	serve?: (request: IncomingMessage, response: ServerResponse) => boolean | Promise<boolean>;
	/** Called when a request arrives, before anything is done with it (to inspect the client). */
	onArrival?: (request: {key: string | undefined; body: string}) => void | Promise<void>;
}

/**
 * A local HTTP server that honours sendonce's server contract (SPEC.md, "The server side"):
 * it claims the key atomically before the work, answers 409 while that work runs, 422 for
 * the key reused with another body, and stores and replays its answer with
 * `Idempotent-Replayed: true`. Faults can be injected per request; effects are counted per
 * order (the body's `order` field, else the whole body), so duplicates show whatever keys
 * the client sent. Requests without a key are simply performed.
 */
export class ContractServer {
	readonly requests: SeenRequest[] = [];
	/** Effects performed, per order. */
	readonly effects = new Map<string, number>();
	readonly faults: Fault[] = [];
	/** Work started and not yet finished (a client may have given up on it). */
	inFlight = 0;
	readonly #keys = new Map<string, KeyEntry>();
	readonly #options: ContractServerOptions;
	readonly #server: Server;
	#url = '';

	constructor(options: ContractServerOptions = {}) {
		this.#options = options;
		this.#server = createServer((request, response) => {
			void this.#handle(request, response);
		});
		this.#server.keepAliveTimeout = 1000;
	}

	get url(): string {
		return this.#url;
	}

	/** Total effects over every order. */
	get totalEffects(): number {
		let total = 0;
		for (const count of this.effects.values()) total += count;
		return total;
	}

	/** The keys of every request seen, in order. */
	get keys(): Array<string | undefined> {
		return this.requests.map(request => request.key);
	}

	/** Listens on `port` (0: a free one) of the loopback interface; rejects when it is taken. */
	async listen(port = 0): Promise<this> {
		await new Promise<void>((resolve, reject) => {
			this.#server.once('error', reject);
			this.#server.listen(port, '127.0.0.1', () => {
				this.#server.off('error', reject);
				resolve();
			});
		});
		const address = this.#server.address() as AddressInfo;
		this.#url = `http://127.0.0.1:${address.port}`;
		return this;
	}

	async close(): Promise<void> {
		this.#server.closeAllConnections();
		await new Promise<void>(resolve => {
			this.#server.close(() => resolve());
		});
	}

	/** Forget every key, count and request. */
	reset(): void {
		this.requests.length = 0;
		this.faults.length = 0;
		this.effects.clear();
		this.#keys.clear();
	}

	async #handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
		if (await this.#options.serve?.(request, response)) return;
		const chunks: Buffer[] = [];
		for await (const chunk of request) chunks.push(chunk as Buffer);
		const body = Buffer.concat(chunks).toString('utf8');
		const header = request.headers[(this.#options.headerName ?? 'idempotency-key').toLowerCase()];
		const key = typeof header === 'string' ? header : undefined;
		const path = request.url ?? '/';
		const index = this.requests.length;
		const seen: SeenRequest = {method: request.method ?? '', path, key, headers: request.headers, body, outcome: 'dropped'};
		this.requests.push(seen);
		await this.#options.onArrival?.({key, body});
		const fault = this.faults.shift() ?? this.#options.faultFor?.({key, path, index});

		const answer = (status: number, text: string, headers: Record<string, string> = {}) => {
			seen.outcome = status;
			response.writeHead(status, {'content-type': 'application/json', ...headers});
			response.end(text);
		};

		const drop = () => {
			seen.outcome = 'dropped';
			request.socket.destroy();
		};

		if (fault?.type === 'error-before') {
			answer(fault.status ?? 503, JSON.stringify({error: 'unavailable'}));
			return;
		}

		if (fault?.type === 'drop-before') {
			drop();
			return;
		}

		if (fault?.type === 'rate-limit') {
			answer(429, JSON.stringify({error: 'slow down'}), {'retry-after': String(fault.seconds ?? 1)});
			return;
		}

		const fingerprint = createHash('sha256').update(`${request.method} ${path}\n${body}`).digest('hex');
		if (key !== undefined) {
			const entry = this.#keys.get(key);
			if (entry && entry.fingerprint !== fingerprint) {
				answer(422, JSON.stringify({error: 'idempotency key reused with another request'}));
				return;
			}

			if (entry && !entry.answer) {
				const retryAfter = this.#options.conflictRetryAfter;
				answer(409, JSON.stringify({error: 'a request with this key is in progress'}), retryAfter === undefined ? {} : {'retry-after': String(retryAfter)});
				return;
			}

			if (entry?.answer) {
				answer(entry.answer.status, entry.answer.body, {'idempotent-replayed': 'true'});
				return;
			}

			// Claim the key before the work: a duplicate arriving now gets 409.
			this.#keys.set(key, {fingerprint});
		}

		const workMs = fault?.type === 'slow' ? fault.ms ?? 300 : this.#options.workMs ?? 0;
		this.inFlight++;
		if (workMs > 0) await new Promise(resolve => setTimeout(resolve, workMs));
		const stored = this.#work(body, key);
		this.inFlight--;
		if (key !== undefined) {
			if (stored.status >= 500) this.#keys.delete(key);
			else this.#keys.set(key, {fingerprint, answer: stored});
		}

		if (fault?.type === 'lose-reply') {
			drop();
			return;
		}

		if (fault?.type === 'error-after') {
			answer(fault.status ?? 502, JSON.stringify({error: 'bad gateway'}));
			return;
		}

		answer(stored.status, stored.body);
	}

	#work(body: string, key: string | undefined): StoredAnswer {
		let parsed: unknown;
		try {
			parsed = JSON.parse(body);
		} catch {
			parsed = body;
		}

		const custom = this.#options.work?.(parsed, key);
		if (custom) {
			if (custom.status >= 200 && custom.status < 300) this.#count(body, parsed);
			return custom;
		}

		if (typeof parsed === 'object' && parsed !== null && (parsed as {reject?: unknown}).reject) {
			return {status: 400, body: JSON.stringify({error: 'invalid order', reason: String((parsed as {reject: unknown}).reject)})};
		}

		const order = this.#count(body, parsed);
		return {status: 201, body: JSON.stringify({id: `order-${this.totalEffects}`, order, effects: this.effects.get(order)})};
	}

	#count(body: string, parsed: unknown): string {
		const order = typeof parsed === 'object' && parsed !== null && 'order' in parsed ? String((parsed as {order: unknown}).order) : body;
		this.effects.set(order, (this.effects.get(order) ?? 0) + 1);
		return order;
	}
}

/** Starts a contract server on a free loopback port. */
export async function startContractServer(options?: ContractServerOptions): Promise<ContractServer> {
	return new ContractServer(options).listen();
}
