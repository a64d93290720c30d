import type {HangUp} from './hang-up.js';

/**
 * What the server half works on, whatever framework carries the request: a view of the request
 * that reads its body only when asked, and an answer as bytes. The adapters (Fetch, node:http,
 * Express, Fastify) convert at their edge, so that the decisions in between stay in one place.
 */

/**
 * Response headers as a list: names lower-case, a name may appear more than once (each of
 * several values of one header is kept).
 *
 * @example
 * import type {HeaderList} from 'sendonce/server';
 *
 * const headers: HeaderList = [['content-type', 'application/json'], ['link', '</a>; rel=next']];
 */
export type HeaderList = Array<[name: string, value: string]>;

/** An answer as the server half sends and stores it: its body fully read. */
export interface Answer {
	status: number;
	statusText?: string;
	headers: HeaderList;
	body: Uint8Array;
}

/** A request's body as it is fingerprinted: its bytes, or the value a body parser made of them. */
export type RequestBody = {bytes: Uint8Array} | {value: unknown};

/** A request as the server half reads it. */
export interface Incoming<Native> {
	/** Upper-case. */
	method: string;
	/** The path and the query. */
	target: string;
	/** A header's value (several joined with ", "), by lower-case name. */
	header(name: string): string | undefined;
	/** The body, at most `limit` bytes; rejects with a `BodyTooLargeError` beyond. */
	body(limit: number): Promise<RequestBody>;
	/** The framework's own request, for `scope`. */
	native: Native;
	/** Aborts when the client hangs up before its answer was sent (where the adapter can tell, and sendonce cannot see the route run). */
	hangUp?: HangUp | undefined;
}

/** Statuses whose responses have no body (the Fetch standard refuses one). */
export const NULL_BODY_STATUSES: ReadonlySet<number> = new Set([101, 103, 204, 205, 304]);

/** An answer's headers with `names` only. */
export function keepHeaders(headers: HeaderList, names: ReadonlySet<string>): HeaderList {
	return headers.filter(([name]) => names.has(name));
}

/** A Node-style header value (a string, several, a number) as one string, or undefined. */
export function joinHeader(value: string | string[] | number | undefined): string | undefined {
	if (value === undefined) return undefined;
	return Array.isArray(value) ? value.join(', ') : String(value);
}

/** Node-style headers (`getHeaders()`) as a list, a value per line. */
export function headerList(headers: Record<string, string | string[] | number | undefined>): HeaderList {
	const list: HeaderList = [];
	for (const name of Object.keys(headers)) {
		const value = headers[name];
		if (value === undefined) continue;
		if (Array.isArray(value)) for (const item of value) list.push([name.toLowerCase(), item]);
		else list.push([name.toLowerCase(), String(value)]);
	}

	return list;
}

/** A list's headers grouped by name, as Node's `setHeader` takes them. */
export function groupHeaders(headers: HeaderList): Map<string, string | string[]> {
	const grouped = new Map<string, string | string[]>();
	for (const [name, value] of headers) {
		const found = grouped.get(name);
		if (found === undefined) grouped.set(name, value);
		else if (Array.isArray(found)) found.push(value);
		else grouped.set(name, [found, value]);
	}

	return grouped;
}
