/**
 * Full-jitter exponential backoff: a delay drawn uniformly from
 * `[0, min(maxDelay, baseDelay · 2^n))`, where n is the number of attempts already made in
 * this send. Jitter spreads the retries of many clients after an outage.
 */
export function backoffDelay(
	attemptsMade: number,
	{baseDelay, maxDelay}: {baseDelay: number; maxDelay: number},
	random: () => number = Math.random,
): number {
	const cap = Math.min(maxDelay, baseDelay * (2 ** attemptsMade));
	return Math.floor(random() * cap);
}
