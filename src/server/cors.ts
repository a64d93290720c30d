import type {NormalizedCors} from './options.js';

/** The CORS headers for an answer to `request`, or none when its origin is not allowed. */
export function corsHeaders(cors: NormalizedCors, request: Request): Record<string, string> {
	const origin = request.headers.get('origin');
	const allowed = origin === null ? undefined : cors.origin(origin);
	if (allowed === undefined) return {};
	return {
		'access-control-allow-origin': allowed,
		'access-control-expose-headers': cors.exposeHeaders,
		...(cors.credentials ? {'access-control-allow-credentials': 'true'} : {}),
		...(allowed === '*' ? {} : {vary: 'Origin'}),
	};
}

/** The answer to a CORS preflight (`OPTIONS` with `Access-Control-Request-Method`), or undefined for any other request. */
export function preflight(cors: NormalizedCors, request: Request, methods: ReadonlySet<string>): Response | undefined {
	if (request.method !== 'OPTIONS' || !request.headers.has('access-control-request-method')) return undefined;
	const headers = corsHeaders(cors, request);
	if (headers['access-control-allow-origin'] !== undefined) {
		headers['access-control-allow-methods'] = [...methods].join(', ');
		headers['access-control-allow-headers'] = cors.allowHeaders;
		headers['access-control-max-age'] = String(cors.maxAge);
		delete headers['access-control-expose-headers'];
	}

	return new Response(null, {status: 204, headers});
}

/** `response` with `headers` added (a handler's headers may be immutable: the response is rebuilt). */
export function withHeaders(response: Response, headers: Record<string, string>): Response {
	const names = Object.keys(headers);
	if (names.length === 0) return response;
	const rebuilt = new Response(response.body, response);
	for (const name of names) {
		if (name === 'vary' && rebuilt.headers.has('vary')) rebuilt.headers.append('vary', headers[name]!);
		else rebuilt.headers.set(name, headers[name]!);
	}

	return rebuilt;
}
