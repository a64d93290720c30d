import {AsyncLocalStorage} from 'node:async_hooks';
import {createServer, type IncomingMessage, type Server, type ServerResponse} from 'node:http';
import {idempotency, memoryKeyStore, type FetchHandler, type KeyStore, type MemoryKeyStore} from '../../src/server.js';
import {closeNow, listenOnLoopback} from './loopback.js';

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
	/** The work, once claimed, waits for `until`: a test says when it ends, whatever the load. */
	| {type: 'hold'; until: Promise<unknown>}
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
	/** The answer's body, as the server wrote it. */
	sent?: Uint8Array<ArrayBuffer>;
}

interface StoredAnswer {
	status: number;
	/** Text, or bytes (a binary answer). */
	body: string | Uint8Array<ArrayBuffer>;
	/** @default 'application/json' */
	type?: string;
}

/** What the handler needs of the request it serves: the fault drawn for it, and whether the work ran. */
interface Pending {
	body: string;
	fault: Fault | undefined;
	worked: boolean;
	/** Resolves when this request's claim is made (or it needs none): the next request may claim. */
	claimed: () => void;
}

export interface ContractServerOptions {
	/** The idempotency header to read. @default 'idempotency-key' */
	headerName?: string;
	/** Seconds a 409 asks the client to wait (`Retry-After`), when set. @default undefined */
	conflictRetryAfter?: number;
	/** The server's clock, for its leases and TTLs. @default () => Date.now() */
	now?: () => number;
	/** How long the work takes when no fault says otherwise. @default 0 */
	workMs?: number;
	/** The work itself: what to answer for a body. @default 201 with `{id, order, effects}` */
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
	/**
	 * How long an idle connection stays open, ms. Short for tests, which close the server; Node's
	 * fetch (undici) does not reuse a connection whose `Keep-Alive: timeout` is 1 s or less. @default 1000
	 */
	keepAliveTimeout?: number;
	/**
	 * Whether the server answers checks of a key (docs/server-contract.md), advertising it with
	 * `Idempotency-TTL` on every keyed answer; its clock and the client's are one (`clockSkew: 0`).
	 * @default false
	 */
	checks?: boolean;
}

/**
 * A local HTTP server that honours sendonce's server contract with our own server half
 * (`sendonce/server` on a memory store): it claims the key atomically before the work,
 * answers 409 while that work runs, 422 for the key reused with another body, and stores and
 * replays its answer with `Idempotent-Replayed: true`; a 5xx from the work releases the key.
 * Faults can be injected per request, around the idempotency layer: `error-before`,
 * `drop-before` and `rate-limit` in front of it, `slow` inside the work, and `lose-reply` and
 * `error-after` once the work is done and stored. Effects are counted per order (the body's
 * `order` field, else the whole body), so duplicates show whatever keys the client sent.
 * Requests without a key are simply performed.
 */
export class ContractServer {
	readonly requests: SeenRequest[] = [];
	/** Effects performed, per order. */
	readonly effects = new Map<string, number>();
	readonly faults: Fault[] = [];
	/** Work started and not yet finished (a client may have given up on it). */
	inFlight = 0;
	readonly #keys: MemoryKeyStore;
	readonly #pending = new WeakMap<Request, Pending>();
	/**
	 * Claims are made in the order requests arrive, as they were when this server claimed keys
	 * synchronously: tests that release two waiting requests at once expect the first to get
	 * the work and the second its 409. The server half hashes the body asynchronously first, so
	 * each claim waits for the one before it (`#turn`), found through the request's async context.
	 */
	readonly #current = new AsyncLocalStorage<Promise<void>>();
	#turn: Promise<void> = Promise.resolve();
	readonly #api: FetchHandler;
	readonly #options: ContractServerOptions;
	readonly #server: Server;
	#url = '';

	constructor(options: ContractServerOptions = {}) {
		this.#options = options;
		this.#keys = memoryKeyStore(options.now ? {now: options.now} : {});
		const keys = this.#keys;
		const store: KeyStore = {
			claim: async (id, claim) => {
				await this.#current.getStore();
				return keys.claim(id, claim);
			},
			renew: async (id, renewal) => keys.renew(id, renewal),
			complete: async (id, completion) => keys.complete(id, completion),
			release: async (id, release) => keys.release(id, release),
			...options.checks ? {check: async (id: string, check: {from: number; ttl: number}) => keys.check!(id, check)} : {},
		};
		const once = idempotency({store, headerName: options.headerName ?? 'idempotency-key', retryAfter: options.conflictRetryAfter ?? 1, ...options.checks ? {clockSkew: 0} : {}});
		this.#api = once(async (request, {key}) => {
			const pending = this.#pending.get(request)!;
			pending.claimed();
			return this.#perform(pending, key);
		});
		this.#server = createServer((request, response) => {
			void this.#handle(request, response);
		});
		this.#server.keepAliveTimeout = options.keepAliveTimeout ?? 1000;
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
		this.#url = await listenOnLoopback(this.#server, port);
		return this;
	}

	async close(): Promise<void> {
		await closeNow(this.#server);
	}

	/** Forget every count, request and queued fault, and every stored key unless `keys` is false. */
	reset({keys = true}: {keys?: boolean} = {}): void {
		this.requests.length = 0;
		this.faults.length = 0;
		this.effects.clear();
		if (keys) this.forgetKeys();
	}

	/**
	 * Forget every stored key and its answer, as a server whose keys expired would: a retry with
	 * an old key is then performed again.
	 */
	forgetKeys(): void {
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

		const answer = (status: number, text: string | Uint8Array<ArrayBuffer>, headers: Record<string, string> = {}) => {
			seen.outcome = status;
			seen.sent = typeof text === 'string' ? new TextEncoder().encode(text) : text;
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

		const previous = this.#turn;
		let claimed!: () => void;
		this.#turn = new Promise(resolve => {
			claimed = resolve;
		});
		const pending: Pending = {body, fault, worked: false, claimed};
		const apiRequest = new Request(new URL(path, 'http://127.0.0.1'), {
			method: request.method,
			headers: Object.entries(request.headers).flatMap(([name, value]) => (value === undefined ? [] : (Array.isArray(value) ? value : [value]).map(item => [name, item] as [string, string]))),
			...(request.method === 'GET' || request.method === 'HEAD' ? {} : {body}),
		});
		this.#pending.set(apiRequest, pending);
		let reply: Response;
		try {
			reply = await this.#current.run(previous, async () => this.#api(apiRequest));
		} finally {
			claimed();
		}

		// Bytes, as the work made them: a binary answer too.
		const text = new Uint8Array(await reply.arrayBuffer());

		// The work is done (and stored, or its key released): now the network loses the reply, or a proxy swaps it.
		if (pending.worked && fault?.type === 'lose-reply') {
			drop();
			return;
		}

		if (pending.worked && fault?.type === 'error-after') {
			answer(fault.status ?? 502, JSON.stringify({error: 'bad gateway'}));
			return;
		}

		const headers = Object.fromEntries(reply.headers);
		// Without `conflictRetryAfter` a 409 says nothing of when to ask again, as before.
		if (this.#options.conflictRetryAfter === undefined) delete headers['retry-after'];
		answer(reply.status, text, headers);
	}

	async #perform(pending: Pending, key: string | undefined): Promise<Response> {
		const {fault} = pending;
		const workMs = fault?.type === 'slow' ? fault.ms ?? 300 : this.#options.workMs ?? 0;
		this.inFlight++;
		if (workMs > 0) await new Promise(resolve => setTimeout(resolve, workMs));
		if (fault?.type === 'hold') await fault.until;
		const stored = this.#work(pending.body, key);
		this.inFlight--;
		pending.worked = true;
		return new Response(stored.body, {status: stored.status, headers: {'content-type': stored.type ?? 'application/json'}});
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
