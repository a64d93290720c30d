import type {Answer} from './http.js';

/**
 * A probe's verdict; `skip` when the flags it needs were not given; `none` when it ran but has no
 * evidence to decide on (its own request refused, the request limit, a rate limit).
 */
export type Verdict = 'pass' | 'warn' | 'fail' | 'skip' | 'none';

/**
 * Why a probe has no verdict: the route refused the request the flags describe (a body its
 * validation refuses, a token it does not take), the run reached its request limit, or a rate
 * limit turned the probe's requests away.
 */
export type Undecided = 'refused' | 'limit' | 'rate-limited';

/** What one probe found: what it sent, what came back, and what to change on the server. */
export interface Finding {
	verdict: Verdict;
	sent: string;
	got: string;
	/** What to change on the server (with no verdict: what to change in the run); absent on a pass. */
	fix?: string;
	/** With the verdict `none`: why there is none. */
	undecided?: Undecided;
}

/** How one probe request differs from the request the flags describe. */
export interface ProbeRequest {
	/** The `Idempotency-Key` header's value, sent as it is; none without it. */
	key?: string;
	body?: string;
	/** Headers added to (or replacing) the request's. */
	headers?: Record<string, string>;
	/** One user's headers (an `--as`) in place of the first `--as`. */
	as?: Record<string, string>;
	/** Another method: an `OPTIONS` preflight carries none of the request's headers or body. */
	method?: string;
	/**
	 * A check of the key (docs/server-contract.md, "Checking a key"): `Idempotency-Check:
	 * created=<this>`, with the request's headers but no body and no content type.
	 */
	check?: number;
}

/** What probes use to reach the endpoint: the request as the flags describe it, and fresh keys. */
export interface ProbeContext {
	method: string;
	/** The request's body (`--json`). */
	body: string;
	/** The headers every request carries (`-H`, and the first `--as`), `content-type` included. */
	headers: Record<string, string>;
	/** One header set per `--as`. */
	users: Array<Record<string, string>>;
	origin: string | undefined;
	concurrency: number;
	/** A key no request has used yet. */
	newKey(): string;
	/** Sends the request with `key` (as is: raw or quoted), `headers` and `body` overriding the defaults. */
	send(init?: ProbeRequest): Promise<Answer>;
	/** Sends the request `times` times at once, each on its own connection, their last bytes released together. */
	sendTogether(init: ProbeRequest, times: number): Promise<Answer[]>;
	/** The same, dropping the connection once the request is written. */
	sendAndDrop(init?: {key?: string}): Promise<void>;
	/**
	 * Whether any answer so far was marked `Idempotent-Replayed: true`: on a server that marks its
	 * stored replays, an unmarked answer to a finished key's repeat is evidence of a second run.
	 */
	marksReplays(): boolean;
	/** The longest any answer has taken so far, in ms. */
	slowest(): number;
	/** Waits `ms` milliseconds. */
	wait(ms: number): Promise<void>;
}

/** One check of the server, and the rule it checks. */
export interface Probe {
	id: string;
	title: string;
	/** The rule of the IETF draft or of Stripe's practice that the probe checks. */
	rule: string;
	run(context: ProbeContext): Promise<Finding>;
}

/** What a probe reports: the probe's identity and its finding. */
export interface ProbeResult extends Finding {
	id: string;
	title: string;
	rule: string;
}
