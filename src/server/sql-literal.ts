/**
 * A statement with its values written in as SQL literals, so that it can share one simple-query
 * round trip with `BEGIN`; undefined when a value cannot be written safely (a NUL would end the
 * query string, anything but text or a finite number is left to the driver). Strings are quoted
 * as libpq's `PQescapeLiteral` quotes them: quotes doubled, and with backslashes doubled in an
 * `E''` string, which reads the same whatever `standard_conforming_strings` says.
 */
export function inlineStatement(text: string, values: readonly unknown[]): string | undefined {
	const literals: string[] = [];
	for (const value of values) {
		if (typeof value === 'number' && Number.isFinite(value)) literals.push(String(value));
		else if (typeof value === 'string' && !value.includes('\0')) literals.push(quote(value));
		else return undefined;
	}

	// `$n` outside quoted strings and identifiers is a parameter.
	let result = '';
	let quoted: '\'' | '"' | undefined;
	for (let index = 0; index < text.length; index++) {
		const char = text[index]!;
		if (quoted) {
			result += char;
			if (char === quoted) quoted = undefined;
			continue;
		}

		if (char === '\'' || char === '"') {
			quoted = char;
			result += char;
			continue;
		}

		const parameter = char === '$' ? /^\d+/.exec(text.slice(index + 1))?.[0] : undefined;
		if (parameter === undefined) {
			result += char;
			continue;
		}

		const literal = literals[Number(parameter) - 1];
		if (literal === undefined) return undefined;
		result += literal;
		index += parameter.length;
	}

	return result;
}

function quote(text: string): string {
	const escaped = text.replaceAll('\'', '\'\'');
	return text.includes('\\') ? ` E'${escaped.replaceAll('\\', '\\\\')}'` : `'${escaped}'`;
}
