/**
 * A claim lost its lease before its answer was stored: another request may have run the same
 * key's handler too. `idempotency()` hands it to `onError` (phase `'lease-lost'`) from the
 * process whose `complete()` found another holder, and from the process that took over a claim
 * whose lease ran out unanswered, so that no second effect goes unreported. The handler's
 * `signal` aborts with it the moment the lease can no longer be confirmed.
 *
 * @example
 * import {LeaseLostError, idempotency} from 'sendonce/server';
 *
 * const once = idempotency({
 * 	onError(error, {key, phase}) {
 * 		if (error instanceof LeaseLostError) console.warn(`key ${key}: check for a second effect (${phase})`);
 * 	},
 * });
 */
export class LeaseLostError extends Error {
	override name = 'LeaseLostError' as const;
	/** The idempotency key. */
	readonly key: string;
	/** The fence of the claim that lost its lease. */
	readonly fence: number;

	constructor(message: string, {key, fence}: {key: string; fence: number}) {
		super(message);
		this.key = key;
		this.fence = fence;
	}
}
