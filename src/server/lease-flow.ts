import {duplicateAnswered} from './duplicate.js';
import {keepHeaders, type Answer} from './exchange.js';
import type {KeyStore} from './key-store.js';
import {AnswerAbandonedError} from './answer-abandoned-error.js';
import {settledWithin, untilAnswered, type HangUp} from './hang-up.js';
import {keepLease} from './lease.js';
import {LeaseLostError} from './lease-lost-error.js';
import type {NormalizedOptions} from './options.js';
import {releases} from './release-rule.js';
import {downstreamKeys} from './downstream-key.js';

/**
 * What a handler is given in lease mode besides the request: the key; the claim's fence, a
 * number larger than any earlier claim's of the same key, for the handler's own writes to
 * refuse a stale holder (`… WHERE fence < $1`); and a signal that aborts the moment the lease
 * is lost. `key` and `fence` are undefined for a request without a key.
 *
 * @example
 * import type {LeaseContext} from 'sendonce/server';
 *
 * const stillMine = (ctx: LeaseContext) => !ctx.signal.aborted;
 */
export interface LeaseContext<Required extends boolean = boolean> {
	key: Required extends true ? string : string | undefined;
	fence: Required extends true ? number : number | undefined;
	signal: AbortSignal;
	/**
	 * A key for one call this handler makes to another service (`idempotencyKey` of a payment API, an
	 * email's Message-ID), the same in every run of this request's key, one per `name`, scoped to the
	 * caller and the route; never the raw key. Undefined for a request without a key.
	 * @example
	 * const charge = await stripe.paymentIntents.create(params, {idempotencyKey: ctx.downstreamKey('charge')});
	 */
	downstreamKey: Required extends true ? (name: string) => string : ((name: string) => string) | undefined;
}

/** The context of a request that runs without a key: a signal of its own, never aborted. */
export function unkeyedLeaseContext(): LeaseContext<false> {
	let signal: AbortSignal | undefined;
	return lazySignal({key: undefined, fence: undefined, downstreamKey: undefined}, () => (signal ??= new AbortController().signal));
}

/**
 * `ctx.signal` made when first read, yet a property like the others: one assigned
 * (`ctx.signal = AbortSignal.any([ctx.signal, request.signal])`) replaces it, as it did when it
 * was made up front.
 */
function lazySignal<Context extends object>(ctx: Context, signal: () => AbortSignal): Context & {signal: AbortSignal} {
	return Object.defineProperty(ctx, 'signal', {
		get: signal,
		set(this: object, value: AbortSignal) {
			Object.defineProperty(this, 'signal', {value, writable: true, enumerable: true, configurable: true});
		},
		enumerable: true,
		configurable: true,
	}) as Context & {signal: AbortSignal};
}

/**
 * One keyed request in lease mode: claim, run the handler (its answer read to the end) while the
 * lease is renewed, then store the answer, or give the key up when the handler threw, its answer
 * says "try again", or its client hung up and no answer came within `hangUpWait`. Every exit
 * passes the one `finally` that stops the renewals. A claim that took over an unanswered one, and
 * an answer that could not be stored because another claim holds the key, are reported as
 * `'lease-lost'`.
 */
export async function leaseFlow(
	settings: NormalizedOptions,
	store: KeyStore,
	request: {key: string; id: string; fingerprint: string},
	run: (ctx: LeaseContext<true>) => Promise<Answer>,
	hangUp: () => HangUp | undefined,
): Promise<Answer> {
	const {key, id, fingerprint} = request;
	const {lease, ttl, emit} = settings;
	// A running claim's record is kept a ttl past the end of its lease: one abandoned by a dead
	// process is still there for the request that takes the key over to name it.
	const keep = lease + ttl;
	const sentAt = performance.now();
	const found = await store.claim(id, {fingerprint, lease, ttl: keep});
	if (found.state !== 'claimed') return duplicateAnswered(found, request, settings);

	const {fence} = found;
	emit?.({type: 'claimed', key, fence});
	const report = (phase: 'renew' | 'complete' | 'release') => (error: unknown) => {
		settings.onError(error, {key, phase, fence});
	};

	const leaseLost = (error: LeaseLostError) => {
		settings.onError(error, {key, phase: 'lease-lost', fence: error.fence});
		emit?.({type: 'lease-lost', key, fence: error.fence});
	};

	if (found.supersedes !== undefined) {
		leaseLost(new LeaseLostError(`Key ${JSON.stringify(key)} was claimed before (fence ${found.supersedes}) by a request whose lease ran out before it answered: if that handler did its work, this run does it again.`, {key, fence: found.supersedes}));
	}

	const held = keepLease(store, {id, key, fence, lease, ttl: keep, sentAt}, report('renew'));
	// A store call that never comes back must not hold the claim (renewed meanwhile) for the life of
	// the process: past a lease, it counts as failed, the renewals stop and the lease runs out.
	const withinLease = async <T>(call: Promise<T>, what: string): Promise<T> =>
		settledWithin(call, lease, () => new Error(`sendonce/server: the store did not ${what} key ${JSON.stringify(key)} within a lease (${lease} ms)`));
	const started = performance.now();
	const release = async (reason: 'throw' | 'status' | 'hang-up', status?: number) => {
		await withinLease(store.release(id, {fence}), 'release').catch(report('release'));
		emit?.({type: 'released', key, reason, ...(status === undefined ? {} : {status}), ms: performance.now() - started});
	};

	try {
		let answer: Answer;
		try {
			answer = await untilAnswered(run(lazySignal({key, fence, downstreamKey: downstreamKeys(id, request.fingerprint)}, () => held.signal)), hangUp(), settings.hangUpWait);
		} catch (error) {
			// The handler is told (its signal aborts) that its claim is given up.
			held.stop(error instanceof AnswerAbandonedError ? error : undefined);
			await release(error instanceof AnswerAbandonedError ? 'hang-up' : 'throw');
			throw error;
		}

		if (releases(answer.status, settings.storeServerErrors)) {
			held.stop();
			await release('status', answer.status);
			return answer;
		}

		// Renewed until the answer is stored: the lease outlives the handler and the reading of its body.
		let stored: boolean | undefined;
		try {
			stored = await withinLease(store.complete(id, {fence, fingerprint, answer: {status: answer.status, headers: keepHeaders(answer.headers, settings.replayHeaders), body: answer.body}, ttl}), 'complete');
		} catch (error) {
			report('complete')(error);
		}

		if (stored === false) leaseLost(new LeaseLostError(`The answer to key ${JSON.stringify(key)} (fence ${fence}) was not stored: another claim or answer holds the key, so its handler may have run twice.`, {key, fence}));
		if (emit) {
			const ms = performance.now() - started;
			const {status} = answer;
			emit(stored ? {type: 'stored', key, status, ms} : {type: 'not-stored', key, reason: stored === false ? 'lease-lost' : 'store-failed', status, ms});
		}

		return answer;
	} finally {
		held.stop();
	}
}
