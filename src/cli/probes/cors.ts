import {describeAnswer} from '../answers.js';
import type {Answer} from '../http.js';
import type {Probe} from '../probe.js';

/** Headers a page cannot set (the browser does), so never asks the preflight for (Fetch standard). */
const FORBIDDEN = new Set(['accept-charset', 'accept-encoding', 'access-control-request-headers', 'access-control-request-method', 'connection', 'content-length', 'cookie', 'cookie2', 'date', 'dnt', 'expect', 'host', 'keep-alive', 'origin', 'referer', 'set-cookie', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'via']);
const SAFELISTED_HEADERS = new Set(['accept', 'accept-language', 'content-language']);

/** Whether a page's request header needs the preflight's leave (simplified: the byte rules on values are left out). */
const needsPreflight = (name: string, value: string): boolean => !FORBIDDEN.has(name) && !name.startsWith('proxy-') && !name.startsWith('sec-')
	&& !(SAFELISTED_HEADERS.has(name) && value.length <= 128)
	&& !(name === 'content-type' && /^\s*(?:application\/x-www-form-urlencoded|multipart\/form-data|text\/plain)\s*(?:;|$)/i.test(value));

/** Methods a page may send without the preflight naming them. */
const SAFELISTED_METHODS = new Set(['GET', 'HEAD', 'POST']);

/** A comma-separated header list, in lower case. */
const list = (value: string | undefined): string[] => (value ?? '').split(',').map(item => item.trim().toLowerCase()).filter(Boolean);

/** 7. With `--origin`: the preflight allows the key, and the answer exposes the replay headers. */
export const cors: Probe = {
	id: 'cors',
	title: 'CORS',
	rule: 'Fetch standard (CORS): the preflight must allow Idempotency-Key; Idempotent-Replayed and Retry-After must be exposed to be read',
	async run(context) {
		const {origin} = context;
		if (origin === undefined) return {verdict: 'skip', sent: 'nothing', got: 'no --origin given'};
		const requested = [...new Set([...Object.entries(context.headers).filter(([name, value]) => needsPreflight(name.toLowerCase(), value)).map(([name]) => name.toLowerCase()), 'idempotency-key'])].sort();
		const preflight = await context.send({
			method: 'OPTIONS',
			headers: {origin, 'access-control-request-method': context.method, 'access-control-request-headers': requested.join(', ')},
		});
		const sent = `OPTIONS from ${origin} asking for ${context.method} with ${requested.join(', ')}, then ${context.method} twice with a key`;
		const allowOrigin = preflight.headers['access-control-allow-origin'];
		const allowCredentials = preflight.headers['access-control-allow-credentials']?.trim() === 'true';
		const allowed = list(preflight.headers['access-control-allow-headers']);
		const methods = (preflight.headers['access-control-allow-methods'] ?? '').split(',').map(item => item.trim()).filter(Boolean);
		// As a browser judges it (Fetch standard, CORS-preflight fetch): a page that sends cookies (a
		// Cookie header here: `credentials: 'include'`) makes a credentialed request, for which `*` is
		// no wildcard.
		const credentialed = Object.keys(context.headers).some(name => name.toLowerCase() === 'cookie');
		// The CORS check (Fetch standard), the same for the preflight and every answer: the origin
		// itself, or `*` where no credentials go; with credentials, Allow-Credentials: true too.
		const originAllows = ({headers}: Answer) => (credentialed
			? headers['access-control-allow-origin'] === origin && headers['access-control-allow-credentials']?.trim() === 'true'
			: headers['access-control-allow-origin'] === origin || headers['access-control-allow-origin'] === '*');
		const wildcard = (values: string[]) => !credentialed && values.includes('*');
		const methodAllowed = SAFELISTED_METHODS.has(context.method) || methods.includes(context.method) || wildcard(methods);
		const refused = requested.filter(name => !allowed.includes(name) && !wildcard(allowed));
		// The Fetch standard never lets `*` cover Authorization; Chromium 156, Firefox 153 and WebKitGTK
		// 2.50 still do for a request without credentials (Chromium reports it deprecated:
		// AuthorizationCoveredByWildcard). It works today, and stops when browsers follow the standard.
		const starAuthorization = requested.includes('authorization') && !allowed.includes('authorization') && wildcard(allowed);
		const preflightGot = `preflight ${preflight.status}, Allow-Origin ${allowOrigin ?? 'absent'}, Allow-Methods ${methods.join(', ') || 'absent'}, Allow-Headers ${allowed.join(', ') || 'absent'}${allowCredentials ? ', Allow-Credentials true' : ''}`;
		const reasons = [
			...(preflight.status < 200 || preflight.status >= 300 ? [`the preflight answered ${preflight.status}`] : []),
			...(originAllows(preflight) ? [] : [credentialed ? `a credentialed request needs Allow-Origin ${origin} (not *) and Allow-Credentials true` : `Allow-Origin is not ${origin} or *`]),
			...(methodAllowed ? [] : [`${context.method} is not in Allow-Methods${methods.includes('*') ? ' (* is no wildcard with credentials)' : ''}`]),
			...(refused.length > 0 ? [`${refused.join(', ')} not allowed${allowed.includes('*') ? ' (* is no wildcard with credentials)' : ''}`] : []),
		];
		if (reasons.length > 0) {
			return {
				verdict: 'fail',
				sent,
				got: `${preflightGot}: ${reasons.join('; ')}: a browser sends no request`,
				fix: `answer the preflight with 204, Access-Control-Allow-Origin: ${origin}, Access-Control-Allow-Methods: ${context.method}, Access-Control-Allow-Headers: ${requested.join(', ')}${credentialed ? ' and Access-Control-Allow-Credentials: true' : ''}`,
			};
		}

		// The key twice: a replay must reach the page as the first answer does (a CORS layer after the
		// idempotency one adds its headers to first answers only, and the page never reads a replay).
		const key = context.newKey();
		const answer = await context.send({key, headers: {origin}});
		const replay = await context.send({key, headers: {origin}});
		const exposed = list(replay.headers['access-control-expose-headers']);
		const hidden = ['idempotent-replayed', 'retry-after'].filter(name => !exposed.includes(name) && !(exposed.includes('*') && !credentialed));
		const got = `${preflightGot}; ${describeAnswer(answer)}, then ${describeAnswer(replay)}, Expose-Headers ${exposed.join(', ') || 'absent'}`;
		const unreadable = [answer, replay].flatMap((each, index) => (originAllows(each) ? [] : [index === 0 ? 'answer' : 'replay']));
		if (unreadable.length > 0) {
			return {verdict: 'fail', sent, got: `${got}: the page cannot read the ${unreadable.join(' or the ')}`, fix: `send Access-Control-Allow-Origin: ${origin}${credentialed ? ' and Access-Control-Allow-Credentials: true' : ''} on every answer (replays and 409s included), not only the preflight`};
		}

		if (starAuthorization) {
			return {
				verdict: 'warn',
				sent,
				got: `${got}: authorization allowed only by Allow-Headers *, which the Fetch standard never lets cover Authorization; browsers still send it today (Chromium reports it deprecated)`,
				fix: `name the headers in Access-Control-Allow-Headers: ${requested.join(', ')}`,
			};
		}

		if (hidden.length > 0) {
			return {verdict: 'warn', sent, got: `${got}: ${hidden.join(' and ')} hidden from the page`, fix: 'send Access-Control-Expose-Headers: Idempotent-Replayed, Retry-After on every answer'};
		}

		return {verdict: 'pass', sent, got};
	},
};
