import {parseArgs} from 'node:util';

/** What `sendonce check` was asked to do. */
export interface CheckOptions {
	url: string;
	method: string;
	/** The request body (`--json`), sent as `application/json`. */
	body: string;
	/** `-H` headers, names in lower case. */
	headers: Record<string, string>;
	/** One header set per `--as`. */
	users: Array<Record<string, string>>;
	concurrency: number;
	origin: string | undefined;
	jsonReport: string | undefined;
	/** Per request, in ms. */
	timeout: number;
	yes: boolean;
}

/** The parsed command line: a check to run, help to print, or why the line is wrong. */
export type Parsed = {type: 'check'; options: CheckOptions} | {type: 'help'} | {type: 'error'; message: string};

export const HELP = `Usage: sendonce check <url> [options]

Probes an endpoint that takes an Idempotency-Key the way a hostile network would (no key,
duplicates, a lost reply, a reused key, concurrent duplicates, key formats, CORS, keys per user)
and prints one line per probe: pass, warn or fail (none: no evidence, such as a body the route
refuses), what was sent, what came back, and what to change. Exits 1 if any probe fails, 3 if
one has no verdict (the run is incomplete), 0 otherwise, 2 on a bad command line.

WARNING: this sends real requests that take effect (at most 30 plus --concurrency; a run that
reaches that count stops): point it at a test endpoint, or use a test account's credentials. It
asks before it starts, unless --yes is given; without a terminal to ask on, --yes is required.

Options:
  --json <body>          The JSON body of each request (default: {}). Probe 4 sends it with
                         one more field, as "another body".
  -H, --header <h>       A header every request carries, 'Name: value'. Repeatable.
  -X, --method <method>  The method to probe (default: POST).
  --concurrency <n>      How many requests probe 5 sends at once with one key (default: 20).
  --origin <origin>      A page's origin, e.g. https://app.test: probe 7 sends a CORS preflight
                         from it and checks the answers' CORS headers. Skipped without it.
  --as <headers>         One user's headers, 'Name: value' (several separated by newlines).
                         Give it twice: probe 8 sends one key as each user. Skipped otherwise.
                         The first --as is used by the other probes too.
  --json-report <file>   Also write the results as JSON to <file>.
  --timeout <ms>         How long to wait for each answer (default: 10000).
  -y, --yes              Do not ask for confirmation.
  -h, --help             Print this help.

Example:
  npx sendonce check https://api.test/orders --json '{"sku":"A1"}' -H 'Authorization: Bearer test_123'
`;

/** `Name: value` lines into a header record (names in lower case). */
function headerLines(values: string[], flag: string): Record<string, string> | string {
	const headers: Record<string, string> = {};
	for (const line of values.flatMap(value => value.split(/\r?\n/)).filter(line => line.trim() !== '')) {
		const colon = line.indexOf(':');
		if (colon <= 0) return `Expected ${flag} to be 'Name: value', got '${line}'`;
		headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
	}

	return headers;
}

function positiveInteger(value: string, flag: string): number | string {
	const number = Number(value);
	return Number.isInteger(number) && number > 0 ? number : `Expected ${flag} to be a positive integer, got '${value}'`;
}

/** Reads `sendonce`'s arguments (after the program name): `check <url> [options]`. */
export function parseCommandLine(argv: string[]): Parsed {
	let parsed;
	try {
		parsed = parseArgs({
			args: argv,
			allowPositionals: true,
			strict: true,
			options: {
				json: {type: 'string', default: '{}'},
				header: {type: 'string', short: 'H', multiple: true, default: []},
				method: {type: 'string', short: 'X', default: 'POST'},
				concurrency: {type: 'string', default: '20'},
				origin: {type: 'string'},
				as: {type: 'string', multiple: true, default: []},
				'json-report': {type: 'string'},
				timeout: {type: 'string', default: '10000'},
				yes: {type: 'boolean', short: 'y', default: false},
				help: {type: 'boolean', short: 'h', default: false},
			},
		});
	} catch (error) {
		return {type: 'error', message: (error as Error).message};
	}

	const {values, positionals} = parsed;
	if (values.help) return {type: 'help'};
	const [command, url, ...rest] = positionals;
	if (command === undefined) return {type: 'help'};
	if (command !== 'check') return {type: 'error', message: `Unknown command '${command}': the command is check`};
	if (url === undefined) return {type: 'error', message: 'Expected the URL to check: sendonce check <url>'};
	if (rest.length > 0) return {type: 'error', message: `Unexpected argument '${rest[0]}'`};
	if (!/^https?:\/\//.test(url) || !URL.canParse(url)) return {type: 'error', message: `Expected an http: or https: URL, got '${url}'`};
	try {
		JSON.parse(values.json);
	} catch {
		return {type: 'error', message: `Expected --json to be JSON, got '${values.json}'`};
	}

	const headers = headerLines(values.header, '-H');
	if (typeof headers === 'string') return {type: 'error', message: headers};
	const users: Array<Record<string, string>> = [];
	for (const set of values.as) {
		const user = headerLines([set], '--as');
		if (typeof user === 'string') return {type: 'error', message: user};
		users.push(user);
	}

	const concurrency = positiveInteger(values.concurrency, '--concurrency');
	if (typeof concurrency === 'string') return {type: 'error', message: concurrency};
	// One request is no duplicate: probe 5 would pass a server it never tested.
	if (concurrency < 2) return {type: 'error', message: `Expected --concurrency to be at least 2 (duplicates at once), got '${values.concurrency}'`};
	const timeout = positiveInteger(values.timeout, '--timeout');
	if (typeof timeout === 'string') return {type: 'error', message: timeout};
	if (values.origin !== undefined && !URL.canParse(values.origin)) return {type: 'error', message: `Expected --origin to be an origin such as https://app.test, got '${values.origin}'`};
	return {
		type: 'check',
		options: {
			url,
			method: values.method.toUpperCase(),
			body: values.json,
			headers,
			users,
			concurrency,
			origin: values.origin === undefined ? undefined : new URL(values.origin).origin,
			jsonReport: values['json-report'],
			timeout,
			yes: values.yes,
		},
	};
}
