const DAY = '(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)';
const LONG_DAY = '(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day';
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const MONTH = `(${MONTHS.join('|')})`;
const TIME = '(\\d\\d):(\\d\\d):(\\d\\d)';

/**
 * RFC 9110 §5.6.7: IMF-fixdate, and the two obsolete forms a recipient must accept (RFC 850,
 * asctime), each with where its year, month, day, hour, minute and second are among its groups.
 */
const FORMS: Array<[RegExp, number[]]> = [
	[new RegExp(`^${DAY}, (\\d\\d) ${MONTH} (\\d{4}) ${TIME} GMT$`), [3, 2, 1, 4, 5, 6]],
	[new RegExp(`^${LONG_DAY}, (\\d\\d)-${MONTH}-(\\d\\d) ${TIME} GMT$`), [3, 2, 1, 4, 5, 6]],
	[new RegExp(`^${DAY} ${MONTH} ([ \\d]\\d) ${TIME} (\\d{4})$`), [6, 1, 2, 3, 4, 5]],
];

/** An HTTP-date, as RFC 9110 defines it, in epoch milliseconds; undefined for anything else. */
export function parseHttpDate(text: string, now: number): number | undefined {
	for (const [form, order] of FORMS) {
		const match = form.exec(text);
		if (!match) continue;
		const [year, month, day, hour, minute, second] = order.map(group => match[group]!);
		let full = Number(year);
		if (year!.length === 2) {
			// A two-digit year more than 50 years ahead is in the past century (RFC 9110 §5.6.7).
			const thisYear = new Date(now).getUTCFullYear();
			full += Math.floor(thisYear / 100) * 100;
			if (full > thisYear + 50) full -= 100;
		}

		// Out of range (no `Date` rollover): not a date.
		const [d, h, m, s] = [day, hour, minute, second].map(Number) as [number, number, number, number];
		if (d < 1 || d > 31 || h > 23 || m > 59 || s > 60) return undefined;
		const time = Date.UTC(full, MONTHS.indexOf(month!), d, h, m, Math.min(s, 59));
		return new Date(time).getUTCDate() === d ? time : undefined;
	}

	return undefined;
}

/**
 * Milliseconds to wait from a `Retry-After` header: delay-seconds (`120`) or an HTTP-date
 * (`Wed, 21 Oct 2026 07:28:00 GMT`, or its obsolete RFC 850 and asctime forms). `undefined`
 * when absent or anything else (`"a, 5"`, `"June 5"`): the backoff applies then. A date in
 * the past gives 0.
 */
export function parseRetryAfter(value: string | undefined, now: number = Date.now()): number | undefined {
	if (value === undefined) return undefined;
	const text = value.trim();
	if (/^\d+$/.test(text)) return Number(text) * 1000;
	const date = parseHttpDate(text, now);
	return date === undefined ? undefined : Math.max(0, date - now);
}
