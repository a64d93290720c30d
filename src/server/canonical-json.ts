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
		index++;
		for (;;) {
			const code = text.charCodeAt(index);
			if (Number.isNaN(code) || code < 0x20) fail();
			index++;
			if (code === 0x22) break;
			if (code === 0x5c) index++;
		}

		// JSON.parse checks the escapes and decodes them; JSON.stringify writes them one way.
		const decoded = JSON.parse(text.slice(start, index)) as string;
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
