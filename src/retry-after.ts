/**
 * Milliseconds to wait from a `Retry-After` header: delay-seconds (`120`) or an HTTP date
 * (`Wed, 21 Oct 2026 07:28:00 GMT`). `undefined` when absent or unreadable; a date in the
 * past gives 0.
 */
export function parseRetryAfter(value: string | undefined, now: number = Date.now()): number | undefined {
	if (value === undefined) return undefined;
	const text = value.trim();
	if (/^\d+$/.test(text)) return Number(text) * 1000;

	// HTTP dates always name the day and month in letters; `Date.parse` alone would also
	// accept bare numbers and ISO strings the header does not allow.
	if (!/[a-z]/i.test(text)) return undefined;
	const date = Date.parse(text);
	if (Number.isNaN(date)) return undefined;
	return Math.max(0, date - now);
}
