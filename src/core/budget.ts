/** What a retry costs, and what a success gives back: AWS SDK v3 standard mode's numbers. */
export const RETRY_COST = 5;
export const TIMEOUT_RETRY_COST = 10;
export const NO_RETRY_INCREMENT = 1;

/** A client-wide token bucket that stops retry storms while the backend is down. */
export interface RetryBudget {
	/** Pays for one retry; false when the bucket cannot. */
	take(cost: number): boolean;
	/** A success: give back what its last retry cost, or 1 when it needed none. */
	refund(lastRetryCost: number | undefined): void;
	readonly tokens: number;
}

export function createRetryBudget(capacity: number | false): RetryBudget {
	// `false`: no budget, a bucket that never runs dry.
	const most = capacity === false ? Infinity : capacity;
	let tokens = most;
	return {
		take(cost) {
			if (cost > tokens) return false;
			tokens -= cost;
			return true;
		},
		refund(lastRetryCost) {
			tokens = Math.min(most, tokens + (lastRetryCost ?? NO_RETRY_INCREMENT));
		},
		get tokens() {
			return tokens;
		},
	};
}
