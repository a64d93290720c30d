import {createRetryBudget, type RetryBudget} from './budget.js';
import {Coordinator, type Claim} from './cross-tab.js';
import {invalidRequest} from './errors/invalid-request-error.js';
import {UnresolvedIntentError} from './errors/unresolved-intent-error.js';
import {deliveredResult, Intent, type IntentContext} from './intent.js';
import {checkKey, randomKey} from './key.js';
import {normalizeOptions, type NormalizedOptions} from './options.js';
import type {IntentRecord} from './record.js';
import {Records} from './records.js';
import {probe} from './probe.js';
import {chooseIntent, type Held} from './scope.js';
import {Queue} from './queue.js';
import {prepareRequest, type PreparedRequest} from './serialize.js';
import {decide} from './decide.js';
import {isInsideWindow, isResumable, isSettled, reduce} from './state.js';
import {createTransport, type Transport} from './transport.js';
import type {ClientOptions, IntentOptions, IntentRequest, IntentResult, IntentStore, SendOnceEvent, SendOptions, StoreOption} from './types.js';
import type {SendOnceClient} from './client-api.js';

/** How many stored intents `resume()` sends at once: the connections a browser opens per host. */
export const RESUME_CONCURRENCY = 6;
/** How many it claims and marks as sending in one store step, ahead of sending them. */
const RESUME_BATCH = 2 * RESUME_CONCURRENCY;
const MAX_SCOPE_LENGTH = 200;

/**
 * Turns the `store` option into a working store, and names the stores an earlier load may have
 * chosen instead (`others`). Given by the layer that knows the stores (src/stores/), as
 * idb-keyval takes its store as an argument: the core opens none itself.
 */
export type StoreResolver = (option: StoreOption, emit: (event: SendOnceEvent) => void) => Promise<{store: IntentStore; others: IntentStore[]}>;

function checkScope(scope: unknown): string {
	if (typeof scope !== 'string' || scope === '' || scope.length > MAX_SCOPE_LENGTH) {
		throw invalidRequest('scope', process.env.NODE_ENV !== 'production' && `Expected \`scope\` to be a string of 1 to ${MAX_SCOPE_LENGTH} characters, got ${JSON.stringify(scope)}`);
	}

	return scope;
}

export class Client implements SendOnceClient, IntentContext {
	readonly options: NormalizedOptions;
	readonly records: Records;
	readonly transport: Transport;
	readonly budget: RetryBudget;
	readonly coordinator: Coordinator;
	readonly #live = new Map<string, Intent>();
	readonly #queue = new Queue();
	/** The intents a resume of this client is sending, by key: what it will give for each. */
	readonly #resuming = new Map<string, Promise<IntentResult | undefined>>();
	/** The resume that calls made in this turn share, until it lists the store. */
	#gathering: Promise<IntentResult[]> | undefined;
	#store: Promise<IntentStore> | undefined;
	#watching = false;
	readonly #resolve: StoreResolver;

	constructor(options: ClientOptions | undefined, resolve: StoreResolver) {
		this.#resolve = resolve;
		this.options = normalizeOptions(options);
		this.transport = createTransport(this.options.fetch);
		this.budget = createRetryBudget(this.options.retry.budget);
		this.records = new Records(async () => this.#openStore(), this.emit);
		this.coordinator = new Coordinator(this.records);
	}

	get durable(): Promise<boolean> {
		return this.#openStore().then(store => store.durable ?? true, () => false);
	}

	readonly emit = (event: SendOnceEvent): void => {
		try {
			this.options.onEvent?.(event);
		} catch {
			// A listener's bug must not break sending.
		}
	};

	isCurrent(intent: Intent): boolean {
		return this.#live.get(intent.scope) === intent;
	}

	readonly checkable = new Map<string, number>();

	forget(intent: Intent): void {
		if (this.isCurrent(intent)) this.#live.delete(intent.scope);
	}

	async intent<Data = unknown>(scope: string, request: IntentRequest<Data>, {replace = false}: IntentOptions = {}): Promise<Intent<Data>> {
		return (await this.#findOrCreate(scope, request, replace, false)).intent as Intent<Data>;
	}

	async send<Data = unknown>(scope: string, request: IntentRequest<Data>, {replace = false, signal}: IntentOptions & SendOptions = {}): Promise<IntentResult<Data>> {
		return (await this.sendNow(scope, request, replace, signal)).result as IntentResult<Data>;
	}

	/**
	 * @internal The one-call path (`send()`, and `sendonce/fetch`): find or create the intent, send it. A press that joined a stored
	 * intent which then vanished unsent by this tab (another tab had settled it, its record not
	 * yet deleted) is a new action, made once more.
	 */
	async sendNow(scope: string, request: IntentRequest<unknown>, replace: boolean, signal: AbortSignal | undefined): Promise<{intent: Intent; result: IntentResult; created: boolean}> {
		for (let tries = 0; ; tries++) {
			const {intent, claim, written} = await this.#findOrCreate(scope, request, replace, true);
			const result = await (claim ? intent.sendClaimed(claim, written, false, signal) : intent.send({signal})) as IntentResult;
			if (!intent.vanished || signal?.aborted || tries > 0) return {intent, result, created: written !== undefined};
		}
	}

	/**
	 * The scope's intent for `request`: the one stored, or a new one. With `sending`, a new
	 * intent is written once, already `sending` its first attempt, while this tab claims it:
	 * one store write before the first byte instead of two.
	 */
	async #findOrCreate(scope: string, request: IntentRequest<unknown>, replace: boolean, sending: boolean): Promise<{intent: Intent; claim?: Claim | undefined; written?: IntentRecord}> {
		checkScope(scope);
		// Take the scope's place in line now, not after hashing: a second press that hashed
		// sooner must still find the first press's intent.
		const preparing = prepareRequest(request, this.options);
		preparing.catch(() => undefined);
		return this.#queue.run(scope, async before => {
			const prepared = await preparing;
			const live = this.#live.get(scope);
			// A press made while the previous one was still being set up is the same action,
			// even when that one has settled meanwhile (a server faster than the hash).
			const earlier = (before as {intent?: unknown} | undefined)?.intent;
			if (!live && !replace && earlier instanceof Intent && !earlier.discarded && earlier.fingerprint === prepared.fingerprint) {
				return {intent: earlier};
			}

			// The intent this page sent, and may still write: where another tab cleared the store, it is
			// what the scope holds (a press keeps its key), as the outcome heard for it says. One this
			// page did not send, and no outcome heard, is not: its record may be gone because another
			// sender settled it (a first attempt refused) unheard.
			const heard = live && this.coordinator.received(live.key);
			const page = live?.rewritable(Date.now(), heard !== undefined) ? live : undefined;
			// Its copy, with the outcome heard for it: the page may have shown it before that tab sent it.
			const copy = page && (heard ? reduce(page.record, {type: 'observe', state: heard.status, attempts: heard.attempts, at: Date.now()}) : page.record);

			const pending = this.#newRecord(scope, prepared);
			let fresh = pending;
			let claiming: Promise<Claim | undefined> | undefined;
			if (sending) {
				// The claim is asked for while the record is written; a lease goes into the write.
				const leased = await this.coordinator.needsLease();
				claiming = this.coordinator.claim(fresh.key, scope, true);
				claiming.catch(() => undefined);
				const lease = leased ? (await claiming)?.lease : undefined;
				fresh = {...reduce(fresh, {type: 'attempt', at: fresh.createdAt}), ...(lease ? {lease: {...lease}} : {})};
			}

			// The scope table (scope.ts), decided against the stored record in the same store transaction
			// as the write: an intent whose write-ahead has committed may have been sent.
			let choice: ReturnType<typeof chooseIntent> | undefined;
			let held: Held | undefined;
			let stored: IntentRecord | undefined;
			let written = false;
			try {
				stored = await this.records.update(scope, current => {
					// Settled in this page, its record not yet deleted: as good as gone.
					const settledHere = current !== undefined && (this.records.settling(current.key) || (live?.key === current.key && isSettled(live.state)));
					held = current
						? (settledHere ? undefined : {...current, mine: live?.key === current.key && live.mine})
						: copy && {...copy, mine: page!.mine};
					choice = chooseIntent(held, prepared.fingerprint, replace, Date.now());
					if (choice === 'new') return fresh;
					// Cleared in another tab while this page shows it: the user acted, its record is written again.
					return choice === 'held' && !current && !isSettled(held!.state) ? copy : undefined;
				}, !live);
				written = true;
			} finally {
				// A write that failed (a full store refused what its decision made) created nothing: nothing held.
				if (!(choice === 'new' && written)) void claiming?.then(async claim => claim?.release()).catch(() => undefined);
			}

			if (choice === 'new') {
				live?.detach();
				const intent = new Intent(this, pending, prepared.session);
				this.#live.set(scope, intent);
				const claim = await claiming;
				if (claim?.lease && !fresh.lease) {
					// Web Locks refused us after all (a sandboxed frame): the lease goes on record now.
					fresh = {...fresh, lease: {...claim.lease}};
					const leased = fresh;
					await this.records.change(scope, fresh.key, () => leased).catch(async (error: unknown) => {
						await claim.release();
						throw error;
					});
				}

				return sending ? {intent, claim, written: fresh} : {intent};
			}

			// What the scope holds: the stored intent or, where another tab cleared the store, this page's.
			const existing = stored ? this.#track(stored) : live!;
			if (choice === 'conflict') throw new UnresolvedIntentError(existing);
			existing.adoptSession(prepared.session);
			return {intent: existing};
		});
	}

	/** A new intent's record: a new key, state `pending`, nothing sent. */
	#newRecord(scope: string, prepared: PreparedRequest): IntentRecord {
		const now = Date.now();
		return {
			v: 1,
			key: this.options.generateKey ? checkKey(this.options.generateKey()) : randomKey(),
			scope,
			state: 'pending',
			request: {url: prepared.url, method: prepared.method, headers: prepared.headers, ...(prepared.body === undefined ? {} : {body: prepared.body})},
			fingerprint: prepared.fingerprint,
			attempts: 0,
			createdAt: now,
			expiresAt: now + this.options.window,
			updatedAt: now,
			// Where an answer from its server said it answers checks: after a reload, with no answer of its own, the intent still knows.
			...this.#checksOf(prepared),
		};
	}

	#checksOf({method, url}: PreparedRequest): {checks?: number} {
		const checks = this.checkable.get(`${method} ${url}`);
		return checks === undefined ? {} : {checks};
	}

	async get(scope: string): Promise<Intent | undefined> {
		checkScope(scope);
		return this.#queue.run(scope, async () => this.#find(scope));
	}

	async list(): Promise<Intent[]> {
		const intents: Intent[] = [];
		for (const record of await this.records.all()) {
			const intent = await this.#adopt(record);
			if (intent) intents.push(intent);
		}

		return intents;
	}

	async resume(): Promise<IntentResult[]> {
		this.#watchLifecycle();
		// Each call covers every intent stored when it is made: one made while a pass runs starts
		// another, which joins the sends the first started and sends what was stored since. Calls
		// made in one turn (three lifecycle events at once) share a pass: it lists after them.
		this.#gathering ??= Promise.resolve().then(async () => {
			this.#gathering = undefined;
			return this.#resumeAll();
		});
		return this.#gathering;
	}

	/**
	 * After the app's first `resume()`, resume again whenever an interrupted intent may be
	 * sendable: back online, the page visible again, the page restored from the back/forward
	 * cache. A trigger that comes while a resume runs starts another, which joins its sends.
	 */
	#watchLifecycle(): void {
		if (this.#watching) return;
		this.#watching = true;
		const target = globalThis as unknown as Partial<EventTarget> & {document?: Document};
		if (typeof target.addEventListener !== 'function') return;
		const again = () => {
			this.resume().catch((error: unknown) => {
				this.emit({type: 'store-error', error});
			});
		};

		target.addEventListener('online', again);
		target.addEventListener('pageshow', again);
		target.document?.addEventListener('visibilitychange', () => {
			if (target.document?.visibilityState === 'visible') again();
		});
	}

	async clear(): Promise<void> {
		for (const intent of this.#live.values()) intent.detach();
		this.#live.clear();
		await this.records.clear();
	}

	/**
	 * Sends every interrupted intent: claimed and marked as sending in batches, one store step a
	 * batch, and sent a bounded number at a time; settled ones are deleted together (see
	 * `Records.removeSoon`).
	 */
	async #resumeAll(): Promise<IntentResult[]> {
		const intents: Intent[] = [];
		// An intent another resume of this client has taken up is joined, never claimed a second time.
		const joined: Array<Promise<IntentResult | undefined>> = [];
		const taken = new Map<string, {resolve: (result: IntentResult | undefined) => void; reject: (error: unknown) => void}>();
		for (const record of await this.records.all()) {
			// A service worker's note is left for get(), list() and useIntent() to show, unless it
			// is of the intent this page holds: that one takes it up. (A failed mark is removed.)
			if (record.state === 'succeeded' && this.#live.get(record.scope)?.key !== record.key) continue;
			// Interrupted as the store or this page's copy says: the copy may show it unresolved (a
			// `headers()` that threw took its attempt back), or be behind what another sender stored.
			const intent = await this.#adopt(record);
			if (!intent || !(isResumable(record.state) || isResumable(intent.state))) continue;
			const running = this.#resuming.get(intent.key);
			if (running) {
				joined.push(running);
				continue;
			}

			intents.push(intent);
			const taking = new Promise<IntentResult | undefined>((resolve, reject) => {
				taken.set(intent.key, {resolve, reject});
			});
			taking.catch(() => undefined);
			this.#resuming.set(intent.key, taking);
		}

		// A resume that joined this one's intent hears its result, or its error.
		const done = (key: string, result: IntentResult | undefined, error?: {error: unknown}) => {
			if (error) taken.get(key)?.reject(error.error);
			else taken.get(key)?.resolve(result);
			taken.delete(key);
			this.#resuming.delete(key);
		};

		const results: IntentResult[] = [];
		const started = new Set<string>();
		const sending = new Set<Promise<void>>();
		const claim = (index: number) => {
			if (index >= intents.length) return undefined;
			const claimed = this.#claimBatch(intents.slice(index, index + RESUME_BATCH));
			// Awaited in its turn below; until then its failure is not unhandled.
			claimed.catch(() => undefined);
			return claimed;
		};

		// One intent's error (a `headers()` that threw) stops none of the others, and leaves
		// nothing claimed: every claimed intent is started, and the first error thrown at the end.
		const errors: unknown[] = [];
		// The next batch is claimed while this one sends, so that no slot waits for the store.
		let next = claim(0);
		try {
			for (let index = 0; next; index += RESUME_BATCH) {
				const starts = await next;
				next = claim(index + RESUME_BATCH);
				for (const [position, start] of starts.entries()) {
					while (sending.size >= RESUME_CONCURRENCY) await Promise.race([...sending]);
					const {key} = intents[index + position]!;
					started.add(key);
					const sent: Promise<void> = start().then(result => {
						if (result) results.push(result);
						done(key, result);
					}, (error: unknown) => {
						errors.push(error);
						done(key, undefined, {error});
					}).finally(() => sending.delete(sent));
					sending.add(sent);
				}
			}
		} catch (error) {
			// A store error: what it left unstarted fails for the resumes that joined it too.
			for (const key of [...taken.keys()]) if (!started.has(key)) done(key, undefined, {error});
			throw error;
		} finally {
			// An array: the Hermes of React Native 0.70 and older reads no other iterable here (a Set
			// gives [] at once, and resume() would end before its sends).
			await Promise.all([...sending]);
		}

		// Not allSettled: older Hermes lacks it.
		const outcomes = await Promise.all(joined.map(async running => running.then(result => ({result}), (error: unknown) => ({error}))));
		for (const outcome of outcomes) {
			if ('error' in outcome) errors.push(outcome.error);
			else if (outcome.result) results.push(outcome.result);
		}

		if (errors.length > 0) throw errors[0];
		return results;
	}

	/**
	 * Claims each intent of `batch` for this tab and, in one store step, records the first
	 * attempt of each still to be sent. What it could not claim or write is sent the usual way
	 * (which waits for the tab that holds it, or finds it settled or expired).
	 */
	async #claimBatch(batch: Intent[]): Promise<Array<() => Promise<IntentResult | undefined>>> {
		const claims = await Promise.all(batch.map(async intent => this.coordinator.claim(intent.key, intent.scope).catch(() => undefined)));
		const written = new Map<Intent, IntentRecord>();
		// What each attempt was written over: a live intent's own copy may be older.
		const priors = new Map<Intent, IntentRecord>();
		const now = Date.now();
		try {
			await this.records.updateMany(batch.flatMap((intent, index) => {
				const lease = claims[index]?.lease;
				return claims[index] ? [[intent.scope, record => {
					const next = record && isInsideWindow(record, now) ? decide(record, intent.record, {type: 'attempt', resume: true, rewrite: false}, now) : undefined;
					if (!next) return undefined;
					const {lease: _, ...prior} = record!;
					priors.set(intent, prior);
					written.set(intent, lease ? {...next, lease: {...lease}} : next);
					return written.get(intent);
				}] as const] : [];
			}));
		} catch (error) {
			await Promise.all(claims.map(async claim => claim?.release()));
			throw error;
		}

		return batch.map((intent, index) => {
			const claim = claims[index];
			const record = written.get(intent);
			if (claim && record) return async () => intent.sendClaimed(claim, record, true, undefined, priors.get(intent));
			void claim?.release();
			return async () => intent.resume();
		});
	}

	/** The live intent for `scope`, else the stored unsettled one. */
	async #find(scope: string): Promise<Intent | undefined> {
		const live = this.#live.get(scope);
		if (live) return live;
		const record = await this.records.read(scope);
		return record && this.#adopt(record);
	}

	/**
	 * One Intent object per stored record. A settled record (a service worker's delivery, or a
	 * crash after the outcome) is removed; a succeeded one is shown once, as succeeded.
	 */
	async #adopt(record: IntentRecord): Promise<Intent | undefined> {
		// Settled in this page, its record not yet deleted: not an intent to show or send.
		if (this.records.settling(record.key)) return undefined;
		if (isSettled(record.state)) {
			const live = this.#live.get(record.scope);
			if (live?.key === record.key) return live;
			await this.records.change(record.scope, record.key, stored => (isSettled(stored.state) ? null : undefined));
			// A page still showing it may have missed the worker's message: it hears it now, before the note is gone.
			if (record.state === 'succeeded') this.coordinator.announce(record.key, deliveredResult(record));
			// Shown once, never made the scope's live intent: a press in the scope meanwhile is a
			// new action, and must stay the one this client writes and sends.
			return record.state === 'succeeded' ? new Intent(this, record) : undefined;
		}

		return this.#track(record);
	}

	/**
	 * The one Intent object for a stored, unsettled record. An Intent this page holds for an
	 * older key of the scope (another tab replaced it) is no longer the scope's: it finds out
	 * at its next write.
	 */
	#track(record: IntentRecord): Intent {
		let intent = this.#live.get(record.scope);
		if (intent?.key !== record.key) {
			intent = new Intent(this, record);
			this.#live.set(record.scope, intent);
		}

		return intent;
	}

	/**
	 * The chosen store, holding every unsettled intent an earlier load left in a store that
	 * `'auto'` chose then and not now (bounded in time: a store that hangs is given up on).
	 */
	async #resolveStore(): Promise<IntentStore> {
		const {store, others} = await this.#resolve(this.options.store, this.emit);
		const records = new Records(async () => store, this.emit);
		for (const other of others) {
			await probe('The other store', async () => records.adopt(other)).catch((error: unknown) => {
				this.emit({type: 'store-error', error});
			});
		}

		return store;
	}

	async #openStore(): Promise<IntentStore> {
		// From the first look at the store on, hear other tabs' outcomes: an Intent this page
		// holds may be settled elsewhere before it is sent from here.
		this.coordinator.listen();
		this.#store ??= this.#resolveStore().catch((error: unknown) => {
			// Try again on next use: a forced store may work later (storage freed, a page reload).
			this.#store = undefined;
			throw error;
		});
		return this.#store;
	}
}
