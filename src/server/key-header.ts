const VISIBLE_ASCII = /^[\x21-\x7e]{1,255}$/;
const SF_STRING = /^"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*)"$/;

/**
 * What an `Idempotency-Key` header holds: no key, a key, or why it is not one.
 *
 * @example
 * import {parseKeyHeader, type ParsedKey} from 'sendonce/server';
 *
 * const parsed: ParsedKey = parseKeyHeader(request.headers.get('idempotency-key'));
 */
export type ParsedKey = {type: 'missing'} | {type: 'key'; key: string} | {type: 'malformed'; reason: string};

/**
 * Reads an idempotency key header. The IETF draft sends the key as an RFC 8941 sf-string
 * (`"abc"`), most APIs send it raw (`abc`): both name the same key. A key is 1 to 255
 * visible ASCII characters; two headers (joined as `a, b`) are malformed.
 *
 * @example
 * import {parseKeyHeader} from 'sendonce/server';
 *
 * parseKeyHeader('"abc"'); // {type: 'key', key: 'abc'}
 */
export function parseKeyHeader(value: string | null | undefined): ParsedKey {
	if (value === null || value === undefined) return {type: 'missing'};
	const trimmed = value.trim();
	if (trimmed === '') return {type: 'malformed', reason: 'the idempotency key is empty'};
	let key = trimmed;
	if (trimmed.startsWith('"')) {
		const quoted = SF_STRING.exec(trimmed);
		if (!quoted) return {type: 'malformed', reason: 'the idempotency key starts with a quote but is not a valid RFC 8941 string'};
		key = quoted[1]!.replaceAll(/\\(["\\])/g, '$1');
	}

	if (!VISIBLE_ASCII.test(key)) {
		return {type: 'malformed', reason: 'an idempotency key is 1 to 255 visible ASCII characters (no spaces, no commas between two keys)'};
	}

	return {type: 'key', key};
}
