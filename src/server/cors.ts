import type {Answer, HeaderList} from './exchange.js';
import type {NormalizedCors} from './options.js';

/** The CORS headers for an answer to a request from `origin`, or none when it is not allowed. */
export function corsHeaders(cors: NormalizedCors, origin: string | undefined): HeaderList {
	const allowed = origin === undefined ? undefined : cors.origin(origin);
	if (allowed === undefined) return [];
	const headers: HeaderList = [['access-control-allow-origin', allowed], ['access-control-expose-headers', cors.exposeHeaders]];
	if (cors.credentials) headers.push(['access-control-allow-credentials', 'true']);
	if (allowed !== '*') headers.push(['vary', 'Origin']);
	return headers;
}

/** The answer to a CORS preflight (`OPTIONS` with `Access-Control-Request-Method`), or undefined for any other request. */
export function preflight(cors: NormalizedCors, request: {method: string; header(name: string): string | undefined}, methods: ReadonlySet<string>): Answer | undefined {
	if (request.method !== 'OPTIONS' || request.header('access-control-request-method') === undefined) return undefined;
	const allowed = corsHeaders(cors, request.header('origin'));
	const headers: HeaderList = allowed.filter(([name]) => name !== 'access-control-expose-headers');
	if (allowed.length > 0) {
		headers.push(
			['access-control-allow-methods', [...methods].join(', ')],
			['access-control-allow-headers', cors.allowHeaders],
			['access-control-max-age', String(cors.maxAge)],
		);
	}

	return {status: 204, headers, body: new Uint8Array(0)};
}

/** `answer` with `headers` added: a `Vary` joins the answer's own, the rest replace theirs. */
export function withHeaders(answer: Answer, headers: HeaderList): Answer {
	if (headers.length === 0) return answer;
	const replaced = new Set(headers.filter(([name]) => name !== 'vary').map(([name]) => name));
	return {...answer, headers: [...answer.headers.filter(([name]) => !replaced.has(name)), ...headers]};
}
