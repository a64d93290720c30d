/**
 * An RFC 9457 problem: `application/problem+json` with a title, the status and a detail
 * that tells the caller what to change.
 */
export function problem(status: number, title: string, detail: string, headers: Record<string, string> = {}): Response {
	return new Response(JSON.stringify({title, status, detail}), {
		status,
		headers: {'content-type': 'application/problem+json', 'cache-control': 'no-store', ...headers},
	});
}
