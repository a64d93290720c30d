const DAY = '(Mon|Tue|Wed|Thu|Fri|Sat|Sun)';
const LONG_DAY = '(Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)';
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const MONTH = `(${MONTHS.join('|')})`;
const TIME = '(\\d\\d):(\\d\\d):(\\d\\d)';

/** RFC 9110 §5.6.7: IMF-fixdate, and the two obsolete forms a recipient must accept. */
const IMF_FIXDATE = new RegExp(`^${DAY}, (\\d\\d) ${MONTH} (\\d{4}) ${TIME} GMT$`);
const RFC850_DATE = new RegExp(`^${LONG_DAY}, (\\d\\d)-${MONTH}-(\\d\\d) ${TIME} GMT$`);
const ASCTIME_DATE = new RegExp(`^${DAY} ${MONTH} ([ \\d]\\d) ${TIME} (\\d{4})$`);

/** Epoch milliseconds, or undefined when a field is out of range (no `Date` rollover). */
function utc(year: number, month: string, day: number, hour: number, minute: number, second: number): number | undefined {
	const index = MONTHS.indexOf(month);
	if (day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) return undefined;
	const time = Date.UTC(year, index, day, hour, minute, Math.min(second, 59));
	return new Date(time).getUTCDate() === day ? time : undefined;
}

/** An HTTP-date, as RFC 9110 defines it, in epoch milliseconds; undefined for anything else. */
export function parseHttpDate(text: string, now: number): number | undefined {
	let match = IMF_FIXDATE.exec(text);
	if (match) return utc(Number(match[4]), match[3]!, Number(match[2]), Number(match[5]), Number(match[6]), Number(match[7]));
	match = ASCTIME_DATE.exec(text);
	if (match) return utc(Number(match[7]), match[2]!, Number(match[3]!.trim()), Number(match[4]), Number(match[5]), Number(match[6]));
	match = RFC850_DATE.exec(text);
	if (!match) return undefined;
	// A two-digit year more than 50 years ahead is in the past century (RFC 9110 §5.6.7).
	const thisYear = new Date(now).getUTCFullYear();
	let year = (Math.floor(thisYear / 100) * 100) + Number(match[4]);
	if (year > thisYear + 50) year -= 100;
	return utc(year, match[3]!, Number(match[2]), Number(match[5]), Number(match[6]), Number(match[7]));
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
