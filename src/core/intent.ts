import {attempt} from './attempt.js';
import {backoffDelay} from './backoff.js';
import {RETRY_COST, TIMEOUT_RETRY_COST, type RetryBudget} from './budget.js';
import {causeOf, storedResult} from './cause.js';
import {advertisedTtl, CHECK_HEADER, isClosed, mayCheck, readCheck} from './check.js';
import {classify, type Answer} from './classify.js';
import {corsRefusal, hiddenHeader} from './cors.js';
import type {Claim, Coordinator} from './cross-tab.js';
import {headerPairs} from './headers.js';
import {formatKey} from './key.js';
import type {NormalizedOptions} from './options.js';
import type {IntentRecord} from './record.js';
import type {Records} from './records.js';
import {parseRetryAfter} from './retry-after.js';
import {storedRequest} from './stored-request.js';
import {isInsideWindow, isResumable, isSettled, mayHaveBeenSent, reduce, type IntentAction} from './state.js';
import {copy, decide, type Write} from './decide.js';
import {idle} from './page.js';
import type {Transport} from './transport.js';
import type {StandardSchemaV1} from './standard-schema.js';
import type {CheckResult, IntentResult, IntentSnapshot, IntentState, SendOnceEvent, SendOptions, StoredRequest, UnresolvedReason} from './types.js';
import {abortError, isOffline, sleep, waitForOnline} from './wait.js';

/** The stored record is no longer this intent's to send: another tab settled, replaced or cleared it. */
const ELSEWHERE = Symbol('elsewhere');

/** What a page gave with the request and is never stored: headers, a schema for the body. */
export interface Session {
	headers: Record<string, string>;
	schema?: StandardSchemaV1 | undefined;
}

/** What the write-ahead did: written (true), or what to return instead of sending. */
type Written = true | typeof ELSEWHERE | IntentResult | undefined;

/** A claim this tab already holds, and whether the first attempt is already on record. */
interface Given {
	claim: Claim;
	written: boolean;
}

/** One running send, shared by every caller of `send()` (and `resume()`) while it runs. */
interface Run {
	readonly promise: Promise<IntentResult | undefined>;
	/** Stops the send: every caller aborted, or the intent was discarded or replaced. */
	readonly stop: AbortController;
	/** Callers still waiting for it; the send stops when the last one aborts. */
	callers: number;
	/** A `resume()`: it sends only while the intent is interrupted, else resolves undefined. */
	readonly onlyIfInterrupted: boolean;
}

/** What an intent needs from its client. */
export interface IntentContext {
	readonly options: NormalizedOptions;
	readonly records: Records;
	readonly transport: Transport;
	readonly budget: RetryBudget;
	readonly coordinator: Coordinator;
	emit(event: SendOnceEvent): void;
	/** Whether `intent` is still the client's intent for its scope (not replaced or discarded). */
	isCurrent(intent: Intent): boolean;
	/** The intent is settled or discarded: the client stops tracking it. */
	forget(intent: Intent): void;
	/** `METHOD url` → the seconds its server keeps keys, where an answer said it answers checks. */
	readonly checkable: Map<string, number>;
}

/** The diagnoses this page has emitted (`cors-headers-hidden`), in development builds. */
const diagnosed = /* @__PURE__ */ new Set<string>();

/** Results this tab made up for an intent it lost track of: never announced as outcomes. */
const UNHEARD = new WeakSet<IntentResult>();

/**
 * @internal The result of an intent another sender (a service worker) delivered and left a note
 * of: the server's answer was not stored with it, so the response says only that it succeeded.
 */
export function deliveredResult(record: IntentRecord): IntentResult {
	return {status: 'succeeded', key: record.key, response: {status: 200, headers: {}}, data: undefined, replayed: true, attempts: record.attempts};
}

/**
 * One user action, with its idempotency key. Get one from `client.intent()`; send it with
 * `send()`, as often as you like: every attempt carries the same key and the same bytes.
 *
 * @example
 * import {createClient} from 'sendonce';
 *
 * const client = createClient();
 * const intent = await client.intent('contact-form', {url: '/api/contact', json: form});
 * const unsubscribe = intent.subscribe(snapshot => render(snapshot.state));
 * const result = await intent.send();
 * if (result.status === 'unresolved') showMayHaveBeenSent();
 */
export class Intent<Data = unknown> {
	readonly #ctx: IntentContext;
	#record: IntentRecord;
	/**
	 * The same for the life of the intent (every record of its key carries the same request),
	 * parsed when a snapshot's `request` is first read: `list()` of 10,000 parses none.
	 */
	#request: StoredRequest | undefined;
	#session: Session;
	#result: IntentResult | undefined;
	#discarded = false;
	/** Made when first read after a change: `list()` of 10,000 makes none. */
	#snapshot: IntentSnapshot | undefined;
	readonly #listeners = new Set<(snapshot: IntentSnapshot) => void>();
	/** Replaced, discarded or lost: never sends or writes again. */
	#detached = false;
	#running: Run | undefined;
	#claim: Claim | undefined;
	#responseBody: ArrayBuffer | string | undefined;
	/** The settled record's deletion: this tab keeps its claim until it is done. */
	#deleting: Promise<void> | undefined;
	/**
	 * The record as it was before an attempt was put on record ahead of the send (`client.send`,
	 * `resume()`), until a byte leaves: restored when nothing was sent after all.
	 */
	#prior: IntentRecord | undefined;
	/** This object sent at least one attempt. */
	#sentHere = false;
	/** Made, pressed or sent in this page: the user's action here, not only one seen in the store. */
	#mine: boolean;
	/** The record vanished before this object sent anything, with no outcome heard. */
	#vanished = false;
	/** The running `check()`, shared by every caller while it runs. */
	#checking: Promise<CheckResult> | undefined;

	/** @internal Created by the client. */
	/** `session`: given when this page made the intent (a press), not when it read it from the store. */
	constructor(ctx: IntentContext, record: IntentRecord, session?: Session) {
		this.#ctx = ctx;
		this.#record = record;
		this.#session = session ?? {headers: {}};
		this.#mine = session !== undefined;
		// A record stored as succeeded is another sender's delivery (a service worker's note); one
		// stored as unresolved keeps why.
		this.#result = record.state === 'succeeded' ? deliveredResult(record) : storedResult(record);
	}

	/** The idempotency key, stable for the life of the intent. */
	get key(): string {
		return this.#record.key;
	}

	/** The scope chosen by the app, such as `'contact-form'` or `'checkout:order-42'`. */
	get scope(): string {
		return this.#record.scope;
	}

	get state(): IntentState {
		return this.#record.state;
	}

	/** Attempts sent so far, all sessions together. */
	get attempts(): number {
		return this.#record.attempts;
	}

	/** Epoch milliseconds. */
	get createdAt(): number {
		return this.#record.createdAt;
	}

	/** Epoch milliseconds; after it the intent is never sent again. */
	get expiresAt(): number {
		return this.#record.expiresAt;
	}

	/** An attempt started and the server did not refuse it: the action may have happened. */
	get mayHaveBeenSent(): boolean {
		return mayHaveBeenSent(this.#record.state, this.#record.attempts, this.#record.reason);
	}

	/** The last result of `send()` in this page. */
	get result(): IntentResult<Data> | undefined {
		return this.#result as IntentResult<Data> | undefined;
	}

	/** @internal The stored URL the intent is sent to. */
	get url(): string {
		return this.#record.request.url;
	}

	/** @internal The last answer's body as it came, when this page received it. */
	get responseBody(): ArrayBuffer | string | undefined {
		return this.#responseBody;
	}

	/** The current immutable snapshot (the same object until something changes). */
	get snapshot(): IntentSnapshot {
		return (this.#snapshot ??= this.#makeSnapshot());
	}

	/** @internal The SHA-256 fingerprint of method, URL and body. */
	get fingerprint(): string {
		return this.#record.fingerprint;
	}

	/** @internal */
	get discarded(): boolean {
		return this.#discarded;
	}

	/**
	 * @internal The stored intent this object stood for was settled and deleted, replaced or
	 * cleared elsewhere before this object sent anything, and no outcome was heard: a press
	 * that joined it is a new action.
	 */
	get vanished(): boolean {
		return this.#vanished;
	}

	/**
	 * Calls `listener` with a new snapshot whenever the intent changes.
	 * @returns unsubscribe
	 */
	subscribe(listener: (snapshot: IntentSnapshot) => void): () => void {
		this.#listeners.add(listener);
		return () => {
			this.#listeners.delete(listener);
		};
	}

	/**
	 * Sends the intent until it settles, runs out of retries, expires or is aborted.
	 * Single-flight: a call while a send is running joins it. Each caller's `signal` ends only
	 * that caller's wait (it resolves `unresolved`, reason `aborted`); the send itself stops when
	 * every caller has aborted, or on `discard()`. Rejects only for a programming or environment
	 * error (a store that cannot be written); every network outcome is a result.
	 */
	async send(options: SendOptions = {}): Promise<IntentResult<Data>> {
		this.#mine = true;
		// This page's own check first: what it finds is this send's outcome too.
		await this.#checking?.catch(() => undefined);
		return this.#start(options.signal, false) as Promise<IntentResult<Data>>;
	}

	/**
	 * Asks the intent's server what became of it, for an `unresolved` or `expired` intent, without
	 * sending the request again: `succeeded` with the server's stored answer, `failed`, or
	 * `not-sent` (the server proved it never ran, and closed its key: nothing sent with it will
	 * ever run); the intent settles so, in every tab. `running` or `unknown`: nothing changes,
	 * it may still have been sent. Only where its server answers checks (`sendonce/server`, see
	 * the `checks` option): else `unknown`, reason `not-offered`, and nothing is asked. Never
	 * rejects for a network outcome; one call at a time, shared by every caller.
	 *
	 * @example
	 * import {createClient} from 'sendonce';
	 *
	 * const client = createClient({checks: true});
	 * const intent = await client.get('contact-form');
	 * const found = await intent?.check();
	 * if (found?.status === 'not-sent') showSendItNow();
	 */
	async check(): Promise<CheckResult<Data>> {
		if (this.#discarded) throw new TypeError(process.env.NODE_ENV !== 'production' ? `The intent ${this.key} was discarded; create a new one with client.intent()` : 'Discarded');
		this.#checking ??= this.#check().finally(() => {
			this.#checking = undefined;
		});
		return this.#checking as Promise<CheckResult<Data>>;
	}

	async #check(): Promise<CheckResult> {
		const {coordinator, emit} = this.#ctx;
		const found = await this.#asked();
		emit({type: 'checked', key: this.key, scope: this.scope, outcome: found.status, ...'reason' in found && {reason: found.reason}});
		// A settled answer (a result: it counts attempts) is every tab's: one asker, one outcome.
		if ('attempts' in found) coordinator.announce(this.key, found);
		return found;
	}

	/** What the server says of the intent, asked by the one tab that holds its claim. */
	async #asked(): Promise<CheckResult> {
		const {coordinator} = this.#ctx;
		// Sent from this page now, or waiting to be: nothing to ask yet. (Taken in from the store as
		// interrupted later on, it is asked about: no one sends it.)
		if (this.#running || isResumable(this.state)) return {status: 'running', key: this.key};
		for (;;) {
			// Settled here, or by another tab and heard: nothing to ask.
			if (this.#result && isSettled(this.#result.status as IntentState)) return this.#result as CheckResult;
			const heard = coordinator.received(this.key);
			if (heard && isSettled(heard.status as IntentState)) return await this.#adoptOutcome(heard) as CheckResult;
			const claim = await coordinator.claim(this.key, this.scope);
			if (!claim) {
				// Another tab sends or checks it: its outcome is this page's too. Unsettled there, ask here.
				const outcome = await coordinator.waitForOwner(this.key, this.scope, new AbortController().signal);
				if (outcome && isSettled(outcome.status as IntentState)) return await this.#adoptOutcome(outcome) as CheckResult;
				// Still stored: claim it now. Gone (settled, replaced or cleared elsewhere): no tab to share the question with.
				const taken = await this.#takenIn();
				if (taken === undefined) continue;
				return typeof taken == 'object' ? taken : this.#ask();
			}

			return this.#holding(claim, async () => {
				const taken = await this.#takenIn();
				if (typeof taken == 'object') return taken;
				const found = await this.#ask();
				// Unsettled, and taken in as interrupted (a closed tab's send): nothing sends it from here.
				if (isResumable(this.state)) {
					this.#record = idle(this.#record, this.#detached, Date.now());
					this.#publish();
				}

				return found;
			});
		}
	}

	/**
	 * Runs `work` with `claim` as this tab's, and gives the claim back however `work` ends: once a
	 * settled record is deleted, so that no other tab takes it up before.
	 */
	async #holding<T>(claim: Claim, work: () => Promise<T>): Promise<T> {
		this.#claim = claim;
		try {
			return await work();
		} finally {
			this.#claim = undefined;
			const deleting = this.#deleting;
			this.#deleting = undefined;
			if (deleting) void deleting.then(async () => claim.release());
			else await claim.release();
		}
	}

	/** The check itself: the key and when it was made, no body; its answer read as `readCheck` says. */
	async #ask(): Promise<CheckResult> {
		const {options, checkable, transport} = this.#ctx;
		const {url, method} = this.#record.request;
		const learned = this.#record.checks ?? checkable.get(`${method} ${url}`);
		const record = learned === undefined ? this.#record : {...this.#record, checks: learned};
		if (!mayCheck(record, options.checks, Date.now())) return {status: 'unknown', key: this.key, reason: 'not-offered'};
		const headers = async () => {
			const merged = await this.#headers();
			// No body: a label for one (a JSON content type) makes some servers refuse to read none.
			delete merged['content-type'];
			// The age by this page's clock too: a clock that runs fast cannot make the key look newer than it is.
			merged[CHECK_HEADER] = `created=${this.createdAt}, age=${Math.max(0, Date.now() - this.createdAt)}`;
			return merged;
		};

		// Never followed: another server, which never saw the key's claims, could close it, or run it.
		const answer = (await attempt(transport, {url, method, headers, redirect: 'error'}, options.timeout, undefined, async () => true))!;
		this.#learn(answer);
		const verdict = readCheck(answer);
		if (verdict.type === 'closed') return this.#settle('not-sent', {status: 'not-sent', key: this.key, response: verdict.response, attempts: this.attempts}) as Promise<CheckResult>;
		if (verdict.type === 'running') return {status: 'running', key: this.key, ...verdict.retryAfter === undefined ? {} : {retryAfter: verdict.retryAfter}};
		if (verdict.type === 'unknown' || !('response' in answer)) return {status: 'unknown', key: this.key, reason: verdict.type === 'unknown' ? verdict.reason : 'no-answer'};
		// The stored answer, as a retry with the key would have got it.
		this.#responseBody = answer.body;
		const stored = classify(answer, options.classify, true);
		if (stored.type === 'succeeded') {
			return this.#settle('succeeded', {
				status: 'succeeded', key: this.key, response: answer.response, ...await this.#validated(answer.data), replayed: true, attempts: this.attempts,
			}) as Promise<CheckResult>;
		}

		if (stored.type === 'failed') return this.#settle('failed', {status: 'failed', key: this.key, response: answer.response, data: answer.data, attempts: this.attempts}) as Promise<CheckResult>;
		return {status: 'unknown', key: this.key, reason: 'released'};
	}

	/**
	 * What the store holds for the intent, read now, as a check takes it: settled (a delivery's
	 * note), what to answer; `true`, gone (settled, replaced or cleared elsewhere, unheard): ask the
	 * server, which knows, whether or not this page keeps it; undefined, still there.
	 */
	async #takenIn(): Promise<CheckResult | true | undefined> {
		const taken = await this.#takeIn(await this.#ctx.records.read(this.scope).catch(() => this.#record));
		return taken && (isSettled(taken.status as IntentState) ? taken as CheckResult : true);
	}

	/** What an answer says of its server's checks: kept with the intent, and for the next ones. */
	#learn(answer: Answer): void {
		const ttl = 'response' in answer ? advertisedTtl(answer.response) : undefined;
		if (ttl === undefined) return;
		const {url, method} = this.#record.request;
		this.#ctx.checkable.set(`${method} ${url}`, ttl);
		if (this.#record.checks !== ttl) this.#record = {...this.#record, checks: ttl};
	}

	/** @internal `resume()`: send only when still interrupted (another tab may have settled it). */
	async resume(): Promise<IntentResult | undefined> {
		await this.#checking?.catch(() => undefined);
		return this.#start(undefined, true);
	}

	/**
	 * @internal Sends with `claim` already held for this tab and, when `written` is given, its
	 * first attempt already on record as `written` (the one write `client.send()` and
	 * `resume()` make for it), over `prior`: the stored record, which another tab may have
	 * moved on since this page last looked.
	 */
	async sendClaimed(claim: Claim, written: IntentRecord | undefined, onlyIfInterrupted: boolean, signal?: AbortSignal, prior?: IntentRecord): Promise<IntentResult | undefined> {
		if (this.#running || this.#discarded) {
			await claim.release();
			return onlyIfInterrupted ? this.resume() : this.send({signal});
		}

		if (written) {
			this.#prior = prior ?? this.#record;
			this.#record = written;
			this.#publish();
		}

		return this.#start(signal, onlyIfInterrupted, {claim, written: written !== undefined});
	}

	async #start(signal: AbortSignal | undefined, onlyIfInterrupted: boolean, given?: Given): Promise<IntentResult | undefined> {
		for (;;) {
			if (this.#discarded) throw new TypeError(process.env.NODE_ENV !== 'production' ? `The intent ${this.key} was discarded; create a new one with client.intent()` : 'Discarded');
			if (isSettled(this.#record.state) && this.#result) return onlyIfInterrupted ? undefined : this.#result;
			if (this.#running?.stop.signal.aborted && !this.#detached) {
				// Every caller of that run left: it is stopping. A new call starts afresh after it.
				await this.#running.promise.catch(() => undefined);
				continue;
			}

			const run = this.#running ?? this.#begin(onlyIfInterrupted, given);
			given = undefined;
			const result = await this.#join(run, signal);
			// A resume() that found nothing to do ends without a result: a send() still sends.
			if (result || onlyIfInterrupted || !run.onlyIfInterrupted) return result;
		}
	}

	#begin(onlyIfInterrupted: boolean, given: Given | undefined): Run {
		const stop = new AbortController();
		if (this.#detached) stop.abort();
		const run: Run = {
			promise: this.#run(stop.signal, onlyIfInterrupted, given).finally(() => {
				if (this.#running === run) this.#running = undefined;
			}),
			stop,
			callers: 0,
			onlyIfInterrupted,
		};
		this.#running = run;
		return run;
	}

	/** Waits for `run` as one of its callers, until `signal` ends this caller's wait. */
	async #join(run: Run, signal: AbortSignal | undefined): Promise<IntentResult | undefined> {
		run.callers++;
		if (!signal) return run.promise;
		let onAbort: (() => void) | undefined;
		const left = new Promise<IntentResult | undefined>(resolve => {
			onAbort = () => {
				run.callers--;
				if (run.callers > 0) {
					resolve({
						status: 'unresolved', key: this.key, reason: 'aborted', error: abortError(signal), attempts: this.attempts, mayHaveBeenSent: this.mayHaveBeenSent,
					});
					return;
				}

				// The last caller left: stop the send, and report how it stopped.
				run.stop.abort(signal.reason);
				resolve(run.promise);
			};

			if (signal.aborted) onAbort();
			else signal.addEventListener('abort', onAbort, {once: true});
		});
		try {
			return await Promise.race([run.promise, left]);
		} finally {
			signal.removeEventListener('abort', onAbort!);
		}
	}

	/**
	 * Forgets the intent locally, once the app has reconciled it: stops a running send and
	 * deletes the stored record. The server is not told.
	 */
	async discard(): Promise<void> {
		if (this.#discarded) return;
		const current = this.#ctx.isCurrent(this);
		this.#letGo();
		// Only this intent's record: another tab may have put a new intent in the scope since.
		if (current) await this.#ctx.records.change(this.scope, this.key, stored => decide(stored, this.#record, {type: 'forget', unsent: false}, Date.now()));
	}

	/** Stops and forgets the intent in this page; the store is the caller's to change. */
	#letGo(): void {
		this.#discarded = true;
		this.detach();
		this.#ctx.forget(this);
		this.#publish();
	}

	/**
	 * @internal Discards the intent only while nothing has been attempted: another tab may
	 * have sent it since this one let go. Undefined when discarded; else the stored record
	 * that was kept.
	 */
	async discardUnsent(): Promise<IntentRecord | undefined> {
		if (this.#discarded) return undefined;
		let kept: IntentRecord | undefined;
		if (this.#ctx.isCurrent(this)) {
			// One store step: the check and the delete.
			await this.#ctx.records.change(this.scope, this.key, stored => {
				const store = decide(stored, this.#record, {type: 'forget', unsent: true}, Date.now());
				kept = store === undefined ? stored : undefined;
				return store;
			});
		}

		if (kept) {
			this.#observe(kept);
			return kept;
		}

		this.#letGo();
		return undefined;
	}

	/** @internal The client replaced this intent: stop, and never write again. */
	detach(): void {
		this.#detached = true;
		this.#running?.stop.abort();
	}

	/** @internal What a later, identical `client.intent()` call gave and is not stored (headers, a schema). */
	adoptSession(session: Session): void {
		this.#session = session;
		this.#mine = true;
	}

	/** @internal Made, pressed or sent in this page (not only listed from the store). */
	get mine(): boolean {
		return this.#mine;
	}

	/**
	 * Claims the intent for this tab and sends it; when another tab holds it, waits for that
	 * tab's outcome instead. Once claimed, the first write-ahead checks, in the same store
	 * transaction, that the record is still this intent's and still to be sent: another tab may
	 * have sent, settled, replaced or cleared it since this page last looked.
	 */
	async #run(signal: AbortSignal, onlyIfInterrupted: boolean, given: Given | undefined): Promise<IntentResult | undefined> {
		const {records, coordinator} = this.#ctx;
		// Delivered elsewhere, and heard: nothing to claim, wait for or send.
		const heard = given ? undefined : coordinator.received(this.key);
		if (heard?.status === 'succeeded') return this.#adoptOutcome(heard);
		for (;;) {
			const claim = given?.claim ?? (signal.aborted ? undefined : await coordinator.claim(this.key, this.scope));
			const written = given?.written ?? false;
			given = undefined;
			if (signal.aborted) {
				// Without the claim, the record is another tab's to write: report, store nothing.
				if (!claim) return await this.#unresolve('aborted', undefined, false);
				return await this.#holding(claim, async () => this.#unresolve('aborted', undefined));
			}

			if (claim) {
				const result = await this.#holding(claim, async () => this.#attempts(signal, onlyIfInterrupted, written));
				if (result !== ELSEWHERE) {
					// What #lost made up is no outcome: other tabs may know the real one.
					if (result && !UNHEARD.has(result)) coordinator.announce(this.key, result);
					return result;
				}
			}

			const outcome = await coordinator.waitForOwner(this.key, this.scope, signal);
			if (outcome) return await this.#adoptOutcome(outcome);
			// The owner let go without a word (it crashed, or its lease went stale): look again. Gone
			// while another tab held it, that tab may have settled it unheard, or its user replaced or
			// discarded it there: never written back from here.
			const taken = await this.#takeIn(await records.read(this.scope));
			if (taken) return taken;
			if (onlyIfInterrupted && !isResumable(this.state)) return undefined;
		}
	}

	/** Takes in what another tab stored for this intent (more attempts, a new state). */
	#observe(stored: IntentRecord): void {
		const {lease: _, ...record} = stored;
		// A settled record is an outcome (adopted as one) or a failed mark on its way out: never a copy.
		if (isSettled(record.state) || (record.updatedAt <= this.#record.updatedAt && record.state === this.#record.state)) return;
		this.#record = record;
		// Left unresolved elsewhere: why, as the sender stored it, rather than this page's older result.
		this.#result = storedResult(record) ?? this.#result;
		this.#publish();
	}

	/**
	 * The outcome another tab announced: this tab's send resolves with it too. A store of
	 * this tab's own (sessionStorage, copied into a duplicated tab) still holds the old state:
	 * bring it up to date, unless this intent has been sent again since.
	 */
	async #adoptOutcome(result: IntentResult): Promise<IntentResult> {
		const state = result.status;
		await this.#write({type: 'heard', action: {type: 'observe', state, attempts: result.attempts, at: Date.now(), cause: state === 'unresolved' ? causeOf(result) : undefined}});
		this.#result = result;
		// The answer is the other sender's: this page's last body belongs to its own older answer.
		this.#responseBody = undefined;
		if (isSettled(state)) this.#ctx.forget(this);
		this.#publish();
		return result;
	}

	/**
	 * The record is gone or belongs to another intent: settled, replaced or cleared elsewhere.
	 * `gone`: no record at all. This page still holds the key and the bytes, and shows the intent
	 * as it last knew it, never as still sending: unresolved once it may have been sent, and its
	 * user's Retry (`send()`) writes it back and sends it with the same key.
	 */
	async #lost(gone = false): Promise<IntentResult> {
		const known = this.#ctx.coordinator.received(this.key);
		if (known) return this.#adoptOutcome(known);
		// Let go, unless this page sent it and may write it back (its user's Retry does).
		const at = Date.now();
		const keep = gone && this.rewritable(at);
		this.#record = idle(this.#record, !keep, at);
		if (!keep) {
			this.#vanished = !this.#sentHere;
			this.#ctx.forget(this);
			this.detach();
		}

		const error = process.env.NODE_ENV !== 'production' ? Object.assign(new Error('Settled, replaced or cleared in another tab'), {name: 'AbortError'}) : abortError();
		this.#result = {
			status: 'unresolved', key: this.key, reason: 'aborted', error, attempts: this.attempts, mayHaveBeenSent: this.mayHaveBeenSent,
		};
		UNHEARD.add(this.#result);
		this.#publish();
		return this.#result;
	}

	/**
	 * The retry loop, run by the tab that holds the claim. `ELSEWHERE` when the stored record
	 * is no longer this intent's to send (settled, replaced or cleared by another tab);
	 * undefined when `onlyIfInterrupted` and another tab already took it past interrupted. An
	 * error (a write-ahead that failed, a `headers()` that threw) rejects, after the intent, if
	 * it was sending, is marked unresolved: it may have been sent, and `send()` may try again.
	 */
	async #attempts(signal: AbortSignal, onlyIfInterrupted: boolean, written: boolean): Promise<IntentResult | typeof ELSEWHERE | undefined> {
		try {
			return await this.#retryLoop(signal, onlyIfInterrupted, written);
		} catch (error) {
			// Nothing left in this run (its first `headers()` threw): the attempt put on record ahead of
			// it is taken back, and the stored record is as it was (`sending` for an interrupted one,
			// which a later resume() sends). This page no longer shows it as sending, since nothing
			// sends it from here; that is stored only where an attempt left: it may have been sent.
			// Waiting for the network (`pending`, an attempt made) is no longer so either: the store keeps
			// it for the next resume().
			const takenBack = this.#prior !== undefined;
			if (takenBack) await this.#rollBack();
			const before = this.#record;
			// Never stored over an outcome another sender (the service worker) stored meanwhile.
			if (!takenBack && before.state === 'sending') await this.#write({type: 'move', action: {type: 'unresolve', cause: {reason: 'aborted'}, at: Date.now()}});
			else this.#record = idle(before, this.#detached, Date.now());
			if (this.#record !== before) this.#publish();

			throw error;
		}
	}

	/** `written`: the first attempt is already on record (counted in `attempts`). */
	async #retryLoop(signal: AbortSignal, onlyIfInterrupted: boolean, written: boolean): Promise<IntentResult | typeof ELSEWHERE | undefined> {
		const {options, budget, emit} = this.#ctx;
		const {retry} = options;
		/** Attempts made in this run; `made`, those that count against `retry.limit`. */
		let tries = 0;
		let made = 0;
		let lastRetryCost: number | undefined;
		let answer: Answer | undefined;
		for (;;) {
			const stop = await this.#beforeAttempt(signal, answer);
			if (stop) return stop;
			let offline = isOffline(options.isOnline);
			if (offline) {
				emit({type: 'wait-online', key: this.key, scope: this.scope, attempt: this.attempts});
				// At least a second: offline attempts are not limited, so no `maxDelay` of 0 may make them a storm.
				await waitForOnline(Math.max(retry.maxDelay, 1000), signal, options.isOnline).catch(() => undefined);
				const stopped = await this.#beforeAttempt(signal, answer);
				if (stopped) return stopped;
				offline = isOffline(options.isOnline);
			}

			const prewritten = written && tries === 0;
			let recorded: Written = true;
			const {url, method, body} = this.#record.request;
			const next = await attempt(this.#ctx.transport, {url, method, body, headers: async () => this.#headers()}, options.timeout, signal, async () => {
				// Write-ahead: the attempt is on record before a byte leaves.
				// Only the user's own press (`send()`, its first attempt) may write back a record that vanished.
				if (!prewritten) recorded = await this.#recordAttempt(onlyIfInterrupted && tries === 0, !onlyIfInterrupted && tries === 0);
				if (recorded !== true) return false;
				this.#prior = undefined;
				this.#sentHere = true;
				emit({type: 'attempt', key: this.key, scope: this.scope, attempt: this.attempts});
				return true;
			});
			if (recorded !== true) return recorded;
			if (!next) return await this.#unresolve('aborted', answer);
			answer = next;
			tries++;
			if (offline && 'error' in next && !next.timedOut && !next.unreadable) {
				// Made while the device said it was offline, and no answer: most likely it never left, but
				// the flag can be wrong, so the attempt stays counted. It uses up no retry and no budget:
				// the intent is `pending` again, waiting for the network.
				await this.#write({type: 'move', action: {type: 'wait', at: Date.now()}});
				this.#publish();
				continue;
			}

			made++;
			// Any earlier attempt, in this page, another tab or before a reload, may have reached the
			// server: counted from the store by the write-ahead, not from this page's older copy.
			const mayHaveReached = this.attempts > 1;

			const verdict = classify(answer, options.classify, mayHaveReached);
			// A diagnosis for developers, as their messages are: it changes no outcome.
			if (process.env.NODE_ENV !== 'production') {
				const hidden = hiddenHeader(answer, mayHaveReached);
				if (hidden && 'response' in answer) {
					const {origin} = new URL(url);
					const id = `${origin} ${hidden}`;
					// Once per page: a diagnosis, in development builds only.
					if (!diagnosed.has(id)) {
						diagnosed.add(id);
						this.#ctx.emit({type: 'cors-headers-hidden', key: this.key, scope: this.scope, origin, header: hidden, status: answer.response.status});
					}
				}
			}

			if ('response' in answer) this.#responseBody = answer.body;
			this.#learn(answer);
			// Its key closed by a check (another tab's, or this page's before a reload): nothing ran, nothing will.
			if ('response' in answer && isClosed(answer.response)) {
				return await this.#settle('not-sent', {status: 'not-sent', key: this.key, response: answer.response, attempts: this.attempts});
			}

			if (verdict.type === 'succeeded' && 'response' in answer) {
				budget.refund(lastRetryCost);
				return await this.#settle('succeeded', {
					status: 'succeeded', key: this.key, response: answer.response, ...await this.#validated(answer.data), replayed: verdict.replayed, attempts: this.attempts,
				});
			}

			if (verdict.type === 'failed' && 'response' in answer) {
				return await this.#settle('failed', {
					status: 'failed', key: this.key, response: answer.response, data: answer.data, attempts: this.attempts,
				});
			}

			if (verdict.type === 'replayed-error' || verdict.type === 'refused' || verdict.type === 'transport' || verdict.type === 'redirected') {
				return await this.#unresolve(verdict.type, answer);
			}

			if (signal.aborted) return await this.#unresolve('aborted', answer);
			if (made >= retry.limit) {
				// A network error from another origin, explained when it was most likely CORS: for
				// developers, as their messages are (it changes no outcome, and costs a request).
				if (process.env.NODE_ENV !== 'production' && 'error' in answer) {
					const error = await corsRefusal(url, answer.error, options.headerName, options.timeout);
					if (error) answer = {...answer, error};
				}

				return await this.#unresolve('exhausted', answer);
			}

			const retryAfter = 'response' in answer ? parseRetryAfter(answer.response.headers['retry-after']) : undefined;
			if (retryAfter !== undefined && retryAfter > retry.maxRetryAfter) return await this.#unresolve('exhausted', answer);
			const cost = 'error' in answer ? TIMEOUT_RETRY_COST : RETRY_COST;
			if (!budget.take(cost)) return await this.#unresolve('budget', answer);
			lastRetryCost = cost;

			const delay = retryAfter ?? backoffDelay(made, retry);
			emit({
				type: 'retry',
				key: this.key,
				scope: this.scope,
				attempt: this.attempts,
				delay,
				...('response' in answer ? {status: answer.response.status} : {error: answer.error}),
			});
			await sleep(delay, signal).catch(() => undefined);
		}
	}

	/** The body, checked by the request's schema when it has one. */
	async #validated(data: unknown): Promise<{data: unknown; issues?: readonly StandardSchemaV1.Issue[]}> {
		const {schema} = this.#session;
		if (!schema) return {data};
		const checked = await schema['~standard'].validate(data);
		return checked.issues ? {data, issues: checked.issues} : {data: checked.value};
	}

	/** Stops for an abort or an expired window; otherwise undefined: go ahead. */
	async #beforeAttempt(signal: AbortSignal, answer: Answer | undefined): Promise<IntentResult | undefined> {
		if (signal.aborted) return this.#unresolve('aborted', answer);
		return isInsideWindow(this.#record, Date.now()) ? undefined : this.#expire();
	}

	/** Client headers, then the request's, then the key: names compared case-insensitively. */
	async #headers(): Promise<Record<string, string>> {
		const {headers, headerName, keyFormat} = this.#ctx.options;
		const merged: Record<string, string> = {};
		const fromClient = headerPairs(typeof headers === 'function' ? await headers() : headers, 'headers');
		for (const source of [fromClient, Object.entries(this.#record.request.headers), Object.entries(this.#session.headers)]) {
			for (const [name, value] of source) merged[name.toLowerCase()] = value;
		}

		merged[headerName.toLowerCase()] = formatKey(this.key, keyFormat);
		return merged;
	}

	/**
	 * Stores the attempt (state `sending`, one more attempt) in one step with checking that the
	 * stored record is still this intent's and, for `resume()`, still interrupted. True when
	 * written; otherwise nothing was written, and what to return instead.
	 */
	async #recordAttempt(onlyIfInterrupted: boolean, mayRewrite = false): Promise<Written> {
		if (!this.#ctx.isCurrent(this)) return ELSEWHERE;
		const at = Date.now();
		let next: IntentRecord | undefined;
		// Gone while this page holds the intent (cleared in another tab, "Clear site data"), and the
		// user presses Retry: the page still has its key and bytes, and a retry with the key can
		// only be replayed, so the record is written again from this page's copy.
		const write: Write = {type: 'attempt', resume: onlyIfInterrupted, rewrite: mayRewrite && this.rewritable(at)};
		const stored = await this.#ctx.records.update(this.scope, record => {
			next = decide(record, this.#record, write, at) ?? undefined;
			return next && this.#withLease(next);
		});
		if (next) {
			this.#record = next;
			this.#publish();
			return true;
		}

		if (stored?.key !== this.key) return ELSEWHERE;
		// Delivered by the service worker: its note is the outcome, for resume() too.
		if (stored.state === 'succeeded') return this.#adoptOutcome(deliveredResult(stored));
		this.#observe(stored);
		if (onlyIfInterrupted && !isResumable(stored.state)) return undefined;
		// Expired by another tab (an explicit send() of an interrupted intent gets here too).
		return stored.state === 'expired' ? this.#expire() : ELSEWHERE;
	}

	/** @internal The record as this page knows it. */
	get record(): IntentRecord {
		return this.#record;
	}

	/**
	 * @internal Whether this page's copy may be written back where its record vanished: this page
	 * sent it (or `heard` its outcome), so it knows the intent may have been sent whatever happened
	 * to the record; and it is still its scope's, unsettled, inside its window. A copy this page
	 * only read from the store is not: the record may be gone because another sender settled it
	 * (a first attempt refused, a success deleted) unheard, and its key must not be sent again.
	 */
	rewritable(now: number, heard = false): boolean {
		return (this.#sentHere || heard) && this.#ctx.isCurrent(this) && !this.#detached && !isSettled(this.#record.state) && isInsideWindow(this.#record, now);
	}

	/**
	 * The attempt put on record ahead of the send never left (an abort, a `headers()` that
	 * threw, an expired window): the record goes back to what it was, since nothing can have
	 * happened. False when another sender counted an attempt since: its record is left alone.
	 */
	async #rollBack(): Promise<boolean> {
		const prior = this.#prior!;
		this.#prior = undefined;
		// A store that failed is no other sender's attempt.
		return await this.#write({type: 'withdraw', prior}) !== false;
	}

	/**
	 * Makes `write` to this intent's stored record, as `decide` says, with this tab's lease, and
	 * takes the page's copy it gives (published by the caller). A store that fails is reported as
	 * a `store-error` event, not thrown: the caller is on its way to an outcome. False when the
	 * store held this intent's record and `decide` left it as it was; undefined when it failed.
	 */
	async #write(write: Exclude<Write, {type: 'attempt' | 'forget'}>): Promise<boolean | undefined> {
		const page = this.#record;
		this.#record = copy(page, write, Date.now());
		return this.#store(write, page);
	}

	/** The store's part of {@link #write}, for the page's copy `page`. */
	async #store(write: Write, page = this.#record): Promise<boolean | undefined> {
		if (!this.#ctx.isCurrent(this)) return true;
		const at = Date.now();
		let left = false;
		try {
			await this.#ctx.records.change(this.scope, this.key, stored => {
				const store = decide(stored, page, write, at);
				left = store === undefined;
				return store && this.#withLease(store);
			});
		} catch (error) {
			this.#ctx.emit({type: 'store-error', key: this.key, scope: this.scope, error});
			return undefined;
		}

		return !left;
	}

	async #settle(state: 'succeeded' | 'failed' | 'not-sent', result: IntentResult): Promise<IntentResult> {
		return this.#finish({type: 'settle', state, at: Date.now()}, result);
	}

	/** `store`: false when this tab does not hold the claim, and the record is not its to write. */
	async #unresolve(reason: UnresolvedReason, answer: Answer | undefined, store = true): Promise<IntentResult> {
		if (this.#prior && !await this.#rollBack()) store = false;
		// The page stops sending: `idle`'s rule. Aborted before any attempt, nothing can have happened
		// and the intent stays pending; after one (waiting for the network too), unresolved. Stored
		// only by the tab that holds the claim, and still the scope's: a page that waited for another
		// tab, or cleared or replaced the intent here, changes only what it shows.
		const at = Date.now();
		const next = idle(this.#record, this.#detached, at);
		const result: IntentResult = {
			status: 'unresolved',
			key: this.key,
			reason,
			error: answer && 'error' in answer ? answer.error : undefined,
			...(answer && 'response' in answer ? {response: answer.response, data: answer.data} : {}),
			attempts: this.attempts,
			mayHaveBeenSent: mayHaveBeenSent(next.state, this.attempts, reason),
		};
		if (!store) this.#record = next;
		return this.#finish(store && next !== this.#record ? {type: 'unresolve', cause: causeOf(result), at} : undefined, result);
	}

	async #expire(): Promise<IntentResult> {
		if (this.#prior && !await this.#rollBack()) {
			// Another tab is sending it: report the window's end, store nothing, announce nothing.
			const result: IntentResult = {status: 'expired', key: this.key, attempts: this.attempts, mayHaveBeenSent: true};
			UNHEARD.add(result);
			return this.#finish(undefined, result);
		}

		// Another tab may have sent it meanwhile: it must not be stored, nor reported, as never sent.
		if (this.#ctx.isCurrent(this)) {
			const taken = await this.#takeIn(await this.#ctx.records.read(this.scope).catch(() => this.#record));
			if (taken) return taken;
		}

		const action: IntentAction | undefined = this.#record.state === 'expired' ? undefined : {type: 'expire', at: Date.now()};
		return this.#finish(action, {
			status: 'expired',
			key: this.key,
			attempts: this.attempts,
			mayHaveBeenSent: mayHaveBeenSent('expired', this.attempts),
		});
	}

	/**
	 * Takes in what the store holds for this intent, read just now: a delivery's note is its
	 * outcome; gone, or another intent's (settled, replaced or cleared elsewhere), this page lost
	 * it; else the record is observed, and undefined: carry on.
	 */
	async #takeIn(stored: IntentRecord | undefined): Promise<IntentResult | undefined> {
		if (stored?.key === this.key && stored.state === 'succeeded') return this.#adoptOutcome(deliveredResult(stored));
		if (stored?.key !== this.key || isSettled(stored.state)) return this.#lost(stored === undefined);
		this.#observe(stored);
		return undefined;
	}

	/**
	 * Records the outcome, then reports it. A store that fails here is reported as a
	 * `store-error` event rather than thrown: the outcome is known and must reach the app. The
	 * stale `sending` record left behind is resent with the same key, which is safe.
	 */
	async #finish(action: IntentAction | undefined, result: IntentResult): Promise<IntentResult> {
		const {records, emit} = this.#ctx;
		const current = this.#ctx.isCurrent(this);
		if (current && action?.type === 'settle' && action.state !== 'succeeded' && !await this.#removeFailed(action)) {
			// Still stored as sending, it would be sent again: the app must not hear "not sent".
			if (result.status === 'failed') {
				const refused: IntentResult = {
					status: 'unresolved', key: this.key, reason: 'refused', error: undefined, response: result.response, data: result.data, attempts: this.attempts, mayHaveBeenSent: true,
				};
				return this.#finish({type: 'unresolve', cause: causeOf(refused), at: action.at}, refused);
			}
		}

		const page = this.#record;
		const next = action ? reduce(page, action) : page;
		this.#record = next;
		this.#result = result;
		if (current && action && next.state === 'succeeded') {
			// A succeeded intent's record is deleted, its absence being the settled state: soon,
			// with others, off the way of the result to the caller. Left behind by a crash, it is
			// sent again with its key and the server replays its answer.
			this.#deleting = records.removeSoon(this.scope, this.key);
		} else if (current && action && !isSettled(next.state)) {
			await this.#store({type: 'move', action}, page);
		}

		if (isSettled(next.state)) this.#ctx.forget(this);
		this.#publish();
		emit({
			type: 'settled',
			key: this.key,
			scope: this.scope,
			attempt: this.attempts,
			outcome: result.status,
			...(result.status === 'unresolved' ? {reason: result.reason} : {}),
			...('response' in result && result.response ? {status: result.response.status} : {}),
		});
		return result;
	}

	/**
	 * A failed intent is gone from the store before the caller hears of it: left behind, it
	 * would be sent again later, though the user was told it was not sent. Where the delete
	 * fails, the record is marked failed instead (never sent again, removed later); false when
	 * neither could be written.
	 */
	async #removeFailed(action: IntentAction): Promise<boolean> {
		const {records} = this.#ctx;
		if (await records.removeNow(this.scope, this.key)) return true;
		// The mark is a write of its own, with no deletion riding along to fail it again.
		records.keep(this.key);
		if (!await this.#store({type: 'move', action})) return false;

		void records.removeSoon(this.scope, this.key);
		return true;
	}

	/** Where Web Locks are missing, every write keeps this tab's lease on the record. */
	#withLease(record: IntentRecord): IntentRecord {
		const lease = this.#claim?.lease;
		return lease ? {...record, lease: {...lease}} : record;
	}

	#makeSnapshot(): IntentSnapshot {
		const record = this.#record;
		const request = () => (this.#request ??= storedRequest(this.#record.request));
		return Object.freeze({
			key: record.key,
			scope: record.scope,
			state: record.state,
			attempts: record.attempts,
			createdAt: record.createdAt,
			expiresAt: record.expiresAt,
			mayHaveBeenSent: mayHaveBeenSent(record.state, record.attempts, record.reason),
			result: this.#result,
			discarded: this.#discarded,
			get request() {
				return request();
			},
		});
	}

	#publish(): void {
		this.#snapshot = undefined;
		for (const listener of this.#listeners) listener(this.snapshot);
	}
}
