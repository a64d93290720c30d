const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Objects and arrays nested deeper than this are not canonicalised (the body's bytes are fingerprinted instead). */
export const MAX_DEPTH = 512;

/**
 * JSON text in canonical form, read from its text rather than through `JSON.parse`: whitespace
 * gone, object members sorted by name (members of one name kept in their order), strings
 * re-escaped as `JSON.stringify` writes them, and every number kept as it was written. So the
 * same values in another member order or spacing give the same text, while numbers that one
 * JavaScript number cannot tell apart (64-bit ids, amounts past 2^53, `0.30000000000000001`) and
 * repeated member names stay different. Undefined when `text` is not JSON.
 */
export function canonicalJsonText(text: string): string | undefined {
	let index = 0;
	let depth = 0;
	const fail = (): never => {
		throw new SyntaxError('not JSON');
	};

	const space = () => {
		for (;;) {
			const code = text.charCodeAt(index);
			if (code === 0x20 || code === 0x0a || code === 0x0d || code === 0x09) index++;
			else return;
		}
	};

	/** A string token: what it says, and how JSON.stringify writes it. */
	const string = (): [decoded: string, written: string] => {
		const start = index;
		let escaped = false;
		index++;
		for (;;) {
			const code = text.charCodeAt(index);
			if (Number.isNaN(code) || code < 0x20) fail();
			index++;
			if (code === 0x22) break;
			if (code === 0x5c) {
				escaped = true;
				index++;
			}
		}

		const token = text.slice(start, index);
		// Without an escape the token is what it says, written as JSON.stringify writes it (a lone
		// surrogate, the one other character it escapes, cannot come from the UTF-8 this text was decoded from).
		if (!escaped && !LONE_SURROGATE.test(token)) return [token.slice(1, -1), token];
		// JSON.parse checks the escapes and decodes them; JSON.stringify writes them one way.
		const decoded = JSON.parse(token) as string;
		return [decoded, JSON.stringify(decoded)];
	};

	const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

	const value = (): string => {
		space();
		const char = text[index];
		// Deeper than this is read as bytes, the same way in every process (a stack's depth is not).
		if ((char === '{' || char === '[') && ++depth > MAX_DEPTH) fail();
		if (char === '{') {
			index++;
			const members: Array<[name: string, written: string, value: string]> = [];
			space();
			if (text[index] === '}') {
				index++;
				// An empty object closes its level as any other does.
				depth--;
				return '{}';
			}

			for (;;) {
				space();
				if (text[index] !== '"') fail();
				const [name, written] = string();
				space();
				if (text[index] !== ':') fail();
				index++;
				members.push([name, written, value()]);
				space();
				if (text[index] === ',') {
					index++;
					continue;
				}

				if (text[index] === '}') {
					index++;
					break;
				}

				fail();
			}

			// By name as Object.keys(…).sort() orders them; the sort is stable: members of one name keep their order.
			members.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
			depth--;
			return `{${members.map(([, written, member]) => `${written}:${member}`).join(',')}}`;
		}

		if (char === '[') {
			index++;
			const items: string[] = [];
			space();
			if (text[index] === ']') {
				index++;
				depth--;
				return '[]';
			}

			for (;;) {
				items.push(value());
				space();
				if (text[index] === ',') {
					index++;
					continue;
				}

				if (text[index] === ']') {
					index++;
					break;
				}

				fail();
			}

			depth--;
			return `[${items.join(',')}]`;
		}

		if (char === '"') return string()[1];
		for (const literal of ['true', 'false', 'null']) {
			if (text.startsWith(literal, index)) {
				index += literal.length;
				return literal;
			}
		}

		NUMBER.lastIndex = index;
		const number = NUMBER.exec(text)?.[0];
		if (number === undefined) return fail();
		index += number.length;
		return number;
	};

	try {
		const result = value();
		space();
		return index === text.length ? result : undefined;
	} catch {
		return undefined;
	}
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const decoder = new TextDecoder();

/** Whether the string token `bytes[start, end)` is written as `JSON.stringify` writes what it says. */
function writtenAsStringify(bytes: Uint8Array, start: number, end: number): boolean {
	const token = decoder.decode(bytes.subarray(start, end));
	try {
		return JSON.stringify(JSON.parse(token)) === token;
	} catch {
		return false;
	}
}

/**
 * Whether the name token `bytes[a, aEnd)` sorts after the name token `bytes[b, bEnd)` (quotes
 * included; `plain` when both are ASCII without escapes), as `canonicalJsonText` orders members.
 */
function after(bytes: Uint8Array, a: number, aEnd: number, b: number, bEnd: number, plain: boolean): boolean {
	if (plain) {
		// ASCII without escapes: bytes compare as UTF-16 code units do (between the quotes: a quote is no character of the name).
		const length = Math.min(aEnd - a, bEnd - b) - 2;
		for (let offset = 1; offset <= length; offset++) {
			const difference = bytes[a + offset]! - bytes[b + offset]!;
			if (difference !== 0) return difference > 0;
		}

		return aEnd - a > bEnd - b;
	}

	const name = (start: number, end: number) => JSON.parse(decoder.decode(bytes.subarray(start, end))) as string;
	return name(a, aEnd) > name(b, bEnd);
}

const ESCAPED = 1;
const NOT_ASCII = 2;
/** What `stringEnd` found in the string token it read last: `ESCAPED`, `NOT_ASCII`, both or none. */
let found = 0;

/**
 * The end (after its closing quote) of the string token that opens at `start`, written as
 * `JSON.stringify` writes what it says; -1 otherwise (a raw control character, the end of the
 * bytes, an escape it would write another way). Without an escape it is written so:
 * `JSON.stringify` escapes only control characters and lone surrogates, and neither is in valid
 * JSON and UTF-8 unescaped.
 */
function stringEnd(bytes: Uint8Array, start: number): number {
	found = 0;
	for (let at = start + 1; at < bytes.length; at++) {
		const byte = bytes[at]!;
		if (byte === QUOTE) return (found & ESCAPED) === 0 || writtenAsStringify(bytes, start, at + 1) ? at + 1 : -1;
		if (byte < 0x20) return -1;
		if (byte === BACKSLASH) {
			found |= ESCAPED;
			at++;
		} else if (byte >= 0x80) {
			found |= NOT_ASCII;
		}
	}

	return -1;
}

const isDigit = (byte: number | undefined) => byte! >= 0x30 && byte! <= 0x39;

/** The end of the number that starts at `start`, written `-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?`; -1 if none does. */
function numberEnd(bytes: Uint8Array, start: number): number {
	let index = start;
	if (bytes[index] === 0x2d) index++;
	if (bytes[index] === 0x30) index++;
	else if (isDigit(bytes[index])) while (isDigit(bytes[index])) index++;
	else return -1;
	if (bytes[index] === 0x2e) {
		if (!isDigit(bytes[++index])) return -1;
		while (isDigit(bytes[index])) index++;
	}

	if (bytes[index] === 0x65 || bytes[index] === 0x45) {
		index++;
		if (bytes[index] === 0x2b || bytes[index] === 0x2d) index++;
		if (!isDigit(bytes[index])) return -1;
		while (isDigit(bytes[index])) index++;
	}

	return index;
}

/** Whether `bytes[index, …)` is the literal `word` (its bytes). */
function literalAt(bytes: Uint8Array, index: number, word: Uint8Array): boolean {
	for (let offset = 0; offset < word.length; offset++) if (bytes[index + offset] !== word[offset]) return false;
	return true;
}

const TRUE = new TextEncoder().encode('true');
const FALSE = new TextEncoder().encode('false');
const NULL = new TextEncoder().encode('null');

// Per open container, reused by every call (it runs to the end without yielding): whether it is
// an object, and its last member's name token (start, end, whether plain ASCII), -1 before the first.
const isObject = new Uint8Array(MAX_DEPTH);
// Float64: a body past 2 GiB (`maxBody: Infinity`) has positions an Int32Array would wrap.
const nameStart = new Float64Array(MAX_DEPTH);
const nameEnd = new Float64Array(MAX_DEPTH);
const namePlain = new Uint8Array(MAX_DEPTH);

/**
 * The end of the member name at `index` and its colon, in an object open at `level`: -1 unless
 * the name is written as `JSON.stringify` writes it and sorts after the member's before it.
 */
function memberEnd(bytes: Uint8Array, index: number, level: number): number {
	if (bytes[index] !== QUOTE) return -1;
	const end = stringEnd(bytes, index);
	if (end < 0) return -1;
	const plain = found === 0;
	if (nameStart[level]! >= 0 && after(bytes, nameStart[level]!, nameEnd[level]!, index, end, plain && namePlain[level] === 1)) return -1;
	nameStart[level] = index;
	nameEnd[level] = end;
	namePlain[level] = plain ? 1 : 0;
	return bytes[end] === 0x3a /* : */ ? end + 1 : -1;
}

/**
 * Whether `bytes` can be fingerprinted as they are, because `canonicalJsonText` would write them
 * back byte for byte: JSON without whitespace, members in order, strings written as
 * `JSON.stringify` writes them (as sendonce's client sends a body). Conservative: false for
 * anything it is not sure of (whitespace, a byte-order mark, nesting deeper than `MAX_DEPTH`),
 * which then goes the long way. One pass over the bytes in one loop, nothing allocated and
 * nothing decoded but escaped or non-ASCII member names (a body of 100 KiB of small objects takes
 * about half of `JSON.parse`'s time).
 */
export function isCanonicalJsonBytes(bytes: Uint8Array): boolean {
	const {length} = bytes;
	let index = 0;
	// Open containers: `isObject[0, depth)` and their last names.
	let depth = 0;
	if (length === 0) return false;
	for (;;) {
		// A value starts at `index`.
		const byte = bytes[index];
		if (byte === 0x7b /* { */ || byte === 0x5b /* [ */) {
			if (depth >= MAX_DEPTH) return false;
			index++;
			const object = byte === 0x7b;
			if (bytes[index] === (object ? 0x7d : 0x5d)) {
				index++;
			} else {
				isObject[depth] = object ? 1 : 0;
				nameStart[depth] = -1;
				depth++;
				if (object && (index = memberEnd(bytes, index, depth - 1)) < 0) return false;
				continue;
			}
		} else if (byte === QUOTE) {
			index = stringEnd(bytes, index);
			if (index < 0) return false;
		} else if (byte === 0x74 /* t */ || byte === 0x66 /* f */ || byte === 0x6e /* n */) {
			const word = byte === 0x74 ? TRUE : byte === 0x66 ? FALSE : NULL;
			if (!literalAt(bytes, index, word)) return false;
			index += word.length;
		} else {
			index = numberEnd(bytes, index);
			if (index < 0) return false;
		}

		// A value ended at `index`: close what it ends, until a comma asks for the next.
		for (;;) {
			if (depth === 0) return index === length;
			const object = isObject[depth - 1] === 1;
			const next = bytes[index];
			if (next === 0x2c /* , */) {
				index++;
				if (object && (index = memberEnd(bytes, index, depth - 1)) < 0) return false;
				break;
			}

			if (next !== (object ? 0x7d : 0x5d)) return false;
			index++;
			depth--;
		}
	}
}

/**
 * The canonical JSON of a parsed value when `JSON.stringify` writes it already (every object's
 * members in order, plain data only: no `toJSON`, no class instances, finite numbers, no
 * functions, symbols or bigints, nested at most `MAX_DEPTH` deep), as a body parser makes of
 * the canonical JSON sendonce's client sends; undefined otherwise, for `canonicalJson` to
 * decide. Checked in one walk, then written natively.
 */
export function stringifiedIfCanonical(value: unknown): string | undefined {
	const plain = (item: unknown, depth: number): boolean => {
		switch (typeof item) {
			case 'string':
			case 'boolean':
			case 'undefined': return true;
			case 'number': return Number.isFinite(item);
			case 'object': break;
			default: return false;
		}

		if (item === null) return true;
		if (depth >= MAX_DEPTH) return false;
		if (Array.isArray(item)) {
			for (let index = 0; index < item.length; index++) {
				const element: unknown = item[index];
				// JSON.stringify writes null for what `canonicalJson` refuses in an array.
				if (element !== undefined && !plain(element, depth + 1)) return false;
			}

			return true;
		}

		const prototype = Object.getPrototypeOf(item) as unknown;
		if ((prototype !== Object.prototype && prototype !== null) || typeof (item as {toJSON?: unknown}).toJSON === 'function') return false;
		let previous: string | undefined;
		for (const name of Object.keys(item)) {
			if (previous !== undefined && previous > name) return false;
			previous = name;
			if (!plain((item as Record<string, unknown>)[name], depth + 1)) return false;
		}

		return true;
	};

	return value !== undefined && plain(value, 0) ? JSON.stringify(value) : undefined;
}
