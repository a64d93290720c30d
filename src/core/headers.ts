import {invalidRequest} from './errors/invalid-request-error.js';
import {describe} from './describe.js';

/** RFC 9110 token: what `fetch` accepts as a header name. */
export const HEADER_NAME = /^[!#$%&'*+.^`|~\w-]+$/;
/** What `fetch` accepts as a header value: bytes, without NUL, CR or LF. */
export const HEADER_VALUE = /^[^\0\r\n\u0100-\uffff]*$/;

/** Checks one header as `fetch` would, naming it in the error; `where` is the option's name. */
export function checkHeader(name: unknown, value: unknown, where: string): void {
	if (typeof name !== 'string' || !HEADER_NAME.test(name)) {
		throw invalidRequest(where, process.env.NODE_ENV !== 'production' && `\`${where}\` has the header name ${JSON.stringify(name)}, which fetch cannot send`);
	}

	if (typeof value !== 'string') throw invalidRequest(`${where}.${name}`, process.env.NODE_ENV !== 'production' && `Expected \`${where}.${name}\` to be a string, got ${describe(value)}`);
	if (!HEADER_VALUE.test(value)) {
		throw invalidRequest(`${where}.${name}`, process.env.NODE_ENV !== 'production' && `\`${where}.${name}\` holds a line break, a NUL or a character above U+00FF`);
	}
}

/** `[name, value]` pairs from what `fetch` accepts as headers: an object, a `Headers`, or pairs. */
export function headerPairs(headers: unknown, where: string): Array<[string, string]> {
	if (headers === undefined) return [];
	if (typeof headers !== 'object' || headers === null) {
		throw invalidRequest(where, process.env.NODE_ENV !== 'production' && `Expected \`${where}\` to be an object of strings, a Headers or [name, value] pairs, got ${describe(headers)}`);
	}

	let pairs: Array<[unknown, unknown]>;
	if (Array.isArray(headers)) {
		pairs = headers.map((pair: unknown) => {
			if (!Array.isArray(pair) || pair.length !== 2) throw invalidRequest(where, process.env.NODE_ENV !== 'production' && `Expected each of \`${where}\` to be a [name, value] pair, got ${JSON.stringify(pair)}`);
			return pair as [unknown, unknown];
		});
	} else if (typeof (headers as Headers).forEach === 'function' && typeof (headers as Headers).get === 'function') {
		pairs = [];
		(headers as Headers).forEach((value, name) => pairs.push([name, value]));
	} else {
		pairs = Object.entries(headers);
	}

	for (const [name, value] of pairs) checkHeader(name, value, where);
	return pairs as Array<[string, string]>;
}
