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

/** Whether the name token `a` sorts after the name token `b` (each `[start, end, plain]`, quotes included), as `canonicalJsonText` orders members. */
function after(bytes: Uint8Array, a: [number, number, boolean], b: [number, number, boolean]): boolean {
	if (a[2] && b[2]) {
		// ASCII without escapes: bytes compare as UTF-16 code units do (between the quotes: a quote is no character of the name).
		const length = Math.min(a[1] - a[0], b[1] - b[0]) - 2;
		for (let offset = 1; offset <= length; offset++) {
			const difference = bytes[a[0] + offset]! - bytes[b[0] + offset]!;
			if (difference !== 0) return difference > 0;
		}

		return a[1] - a[0] > b[1] - b[0];
	}

	const name = (token: [number, number, boolean]) => JSON.parse(decoder.decode(bytes.subarray(token[0], token[1]))) as string;
	return name(a) > name(b);
}

/**
 * Whether `bytes` can be fingerprinted as they are, because `canonicalJsonText` would write them
 * back byte for byte: JSON without whitespace, members in order, strings written as
 * `JSON.stringify` writes them (as sendonce's client sends a body). Conservative: false for
 * anything it is not sure of (whitespace, a byte-order mark, nesting deeper than `MAX_DEPTH`),
 * which then goes the long way. One pass over the bytes, nothing decoded but escaped or
 * non-ASCII member names.
 */
export function isCanonicalJsonBytes(bytes: Uint8Array): boolean {
	let index = 0;
	// Of the last string token read: whether it holds an escape, and whether it is ASCII.
	let escaped = false;
	let ascii = true;
	/** The end (after its closing quote) of the string token that opens at `index`; -1 at a raw control character or the end of the bytes. */
	const stringEnd = (): number => {
		escaped = false;
		ascii = true;
		for (let at = index + 1; at < bytes.length; at++) {
			const byte = bytes[at]!;
			if (byte === QUOTE) return at + 1;
			if (byte < 0x20) break;
			if (byte === BACKSLASH) {
				escaped = true;
				at++;
			} else if (byte >= 0x80) {
				ascii = false;
			}
		}

		return -1;
	};

	const value = (depth: number): boolean => {
		const byte = bytes[index];
		if (byte === 0x7b /* { */ || byte === 0x5b /* [ */) {
			if (depth >= MAX_DEPTH) return false;
			const object = byte === 0x7b;
			const close = object ? 0x7d : 0x5d;
			index++;
			if (bytes[index] === close) {
				index++;
				return true;
			}

			let previous: [number, number, boolean] | undefined;
			for (;;) {
				if (object) {
					if (bytes[index] !== QUOTE) return false;
					const end = stringEnd();
					if (end < 0) return false;
					const name: [number, number, boolean] = [index, end, ascii && !escaped];
					if (escaped && !writtenAsStringify(bytes, index, end)) return false;
					if (previous && after(bytes, previous, name)) return false;
					previous = name;
					index = end;
					if (bytes[index] !== 0x3a /* : */) return false;
					index++;
				}

				if (!value(depth + 1)) return false;
				if (bytes[index] === 0x2c /* , */) {
					index++;
					continue;
				}

				if (bytes[index] !== close) return false;
				index++;
				return true;
			}
		}

		if (byte === QUOTE) {
			const end = stringEnd();
			// Without an escape it is as JSON.stringify writes it, which escapes only control characters and lone surrogates: neither is in valid JSON and UTF-8 unescaped.
			if (end < 0 || (escaped && !writtenAsStringify(bytes, index, end))) return false;
			index = end;
			return true;
		}

		for (const [first, literal] of LITERALS) {
			if (byte !== first) continue;
			for (const expected of literal) if (bytes[index++] !== expected) return false;
			return true;
		}

		return number();
	};

	// -?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?, as written.
	const digits = () => {
		const start = index;
		while (bytes[index]! >= 0x30 && bytes[index]! <= 0x39) index++;
		return index > start;
	};

	const number = (): boolean => {
		if (bytes[index] === 0x2d) index++;
		if (bytes[index] === 0x30) index++;
		else if (!(bytes[index]! >= 0x31 && bytes[index]! <= 0x39) || !digits()) return false;
		if (bytes[index] === 0x2e && (index++, !digits())) return false;
		if (bytes[index] === 0x65 || bytes[index] === 0x45) {
			index++;
			if (bytes[index] === 0x2b || bytes[index] === 0x2d) index++;
			if (!digits()) return false;
		}

		return true;
	};

	return bytes.length > 0 && value(0) && index === bytes.length;
}

const LITERALS: Array<[number, Uint8Array]> = ['true', 'false', 'null'].map(word => [word.charCodeAt(0), new TextEncoder().encode(word)]);

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
