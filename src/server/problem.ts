import type {Answer, HeaderList} from './exchange.js';

const encoder = new TextEncoder();

/**
 * An RFC 9457 problem: `application/problem+json` with a title, the status and a detail
 * that tells the caller what to change.
 */
export function problem(status: number, title: string, detail: string, headers: HeaderList = []): Answer {
	return {
		status,
		headers: [['content-type', 'application/problem+json'], ['cache-control', 'no-store'], ...headers],
		body: encoder.encode(JSON.stringify({title, status, detail})),
	};
}
