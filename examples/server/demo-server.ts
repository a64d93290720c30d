/**
 * The demo's server: one local port serves the built contact-form example, an idempotent
 * `POST /api/contact` served by our own server half (`idempotency()` from `sendonce/server`
 * on a memory store, inside the test suite's `ContractServer`, which adds the faults), and a
 * small control panel for breaking the network on purpose.
 *
 *   POST /api/contact   {name, email, message} → 201 {id, delivered} | 400 {error, reason}
 *   POST /demo/chaos    {action: 'lose-reply' | 'lose-request' | 'error-503' | 'error-401' | 'slow' | 'down' | 'up' | 'reset' | 'forget-keys'}
 *   GET  /demo/stats    {delivered, requests, inFlight, queued, down, recent}
 *
 * Run it with `npm run demo` (which builds the React example first), `npm run demo:vue` (the
 * Vue one, served with `--example vue`), or start it in-process with `startDemoServer({port: 0})`.
 * With `DATABASE_URL` (or `--database <url>`) where PostgreSQL answers, it runs the full mode
 * (full-demo.ts): the same page in front of the outbox example's web process, job queue and mail
 * server.
 */
import {readFile} from 'node:fs/promises';
import type {IncomingMessage, ServerResponse} from 'node:http';
import {extname, join, normalize, resolve, sep} from 'node:path';
import {fileURLToPath, pathToFileURL} from 'node:url';
import {parseArgs} from 'node:util';
import {ContractServer, type Fault} from '../../test/server/contract-server.js';
import {refusal} from '../outbox/refusal.js';

export {refusal};

export type {Fault};

/** The built example (`vite build --config examples/react-form/vite.config.ts`). */
export const EXAMPLE_DIST = fileURLToPath(new URL('../react-form/dist/', import.meta.url));

/** The built examples that `--example <name>` serves; `react` (EXAMPLE_DIST) by default. */
export const EXAMPLE_DISTS = {
	react: EXAMPLE_DIST,
	/** `vite build --config examples/vue-form/vite.config.ts` */
	vue: fileURLToPath(new URL('../vue-form/dist/', import.meta.url)),
} as const;

/** How long "Make the work slow" makes the next delivery: longer than the example's timeout. */
export const SLOW_MS = 4000;

export interface DemoServerOptions {
	/** 0 picks a free port. @default 5173 */
	port?: number;
	/** The directory of static files to serve. @default EXAMPLE_DIST */
	root?: string;
}

export interface DemoServer {
	/** `http://127.0.0.1:<port>` */
	readonly url: string;
	/** The idempotent API: its requests, effects and fault queue. */
	readonly api: ContractServer;
	close(): Promise<void>;
}

/** What `GET /demo/stats` answers. */
export interface DemoStats {
	/** Emails delivered: the work done, once per key however often it was retried. */
	delivered: number;
	/** Requests `POST /api/contact` received, retries included. */
	requests: number;
	/** Deliveries under way. */
	inFlight: number;
	/** Faults waiting for the next requests, in order. */
	queued: Fault[];
	/** Every request is answered 503 before any work. */
	down: boolean;
	/** The last requests to the API, each once, with what reached the page. */
	recent: LoggedRequest[];
	/**
	 * In the full mode (`DATABASE_URL`): what the mail server received since the last reset.
	 * `delivered` is then the number of distinct Message-IDs among them: one per message sent.
	 */
	mail?: MailStats;
}

/** What the mail server of the full mode received, and the queue before it. */
export interface MailStats {
	/** Messages received, copies included. */
	received: number;
	/** Copies: messages received again with a Message-ID already received (a worker sent it again). */
	resent: number;
	/** Jobs not yet done: waiting, running, or failed and waiting for another attempt. */
	jobsLeft: number;
}

/**
 * One request to `POST /api/contact` as the page saw it. Once it has an outcome, the outcome
 * never changes: an answer the server writes after the page stopped waiting reaches no one.
 */
export interface LoggedRequest {
	key: string | undefined;
	/**
	 * - a status: the answer was sent to the page;
	 * - `'waiting'`: no answer yet (the work may be under way);
	 * - `'dropped'`: the server closed the connection without answering (a lost reply, or a
	 *   connection dropped on purpose): the page saw a network error;
	 * - `'gave-up'`: the page closed the connection before any answer (its attempt timed out).
	 */
	outcome: number | 'waiting' | 'dropped' | 'gave-up';
	/** The answer was the server's stored one, replayed (`Idempotent-Replayed: true`). */
	replayed: boolean;
}

/**
 * What the chaos panel can ask for. `reset` zeroes the counts and the log, empties the queue of
 * faults and brings the server up, and keeps the stored keys: a Retry of an earlier message still
 * gets its stored answer. `forget-keys` forgets only the stored keys, as if they had expired: a
 * Retry of an earlier message is then delivered again.
 */
export type ChaosAction = 'lose-reply' | 'lose-request' | 'error-503' | 'error-401' | 'slow' | 'down' | 'up' | 'reset' | 'forget-keys' | MailChaos;

/**
 * The full mode's faults after the web process: `mail-lose-reply`, the mail server takes the next
 * message and drops the connection before saying so; `kill-worker`, the worker dies right after
 * its next hand-off, before the job is marked done. Either way the message goes out again, with
 * the same Message-ID.
 */
export type MailChaos = 'mail-lose-reply' | 'kill-worker';

export const CHAOS: Record<Exclude<ChaosAction, 'down' | 'up' | 'reset' | 'forget-keys' | MailChaos>, Fault> = {
	'lose-reply': {type: 'lose-reply'},
	// Before the server: the connection dropped before any work, as a request lost on the way there.
	'lose-request': {type: 'drop-before'},
	'error-503': {type: 'error-before', status: 503},
	// As an expired sign-in would: refused before any work, whatever an earlier attempt did.
	'error-401': {type: 'error-before', status: 401},
	slow: {type: 'slow', ms: SLOW_MS},
};

/** How many requests `recent` keeps. */
const RECENT = 8;

/**
 * Logs `request` as the page sees it: the status once the answer is sent, else who closed the
 * connection. A client that gives up closes its end first (the socket has ended, or reset),
 * whereas the server's own drop destroys a socket whose reading side is still open.
 */
export function track(request: IncomingMessage, response: ServerResponse, log: LoggedRequest[]): void {
	const header = request.headers['idempotency-key'];
	const entry: LoggedRequest = {key: typeof header === 'string' ? header : undefined, outcome: 'waiting', replayed: false};
	log.push(entry);
	if (log.length > RECENT) log.shift();
	// A header set before `writeHead` makes Node keep the ones it is given: they can be read back.
	response.setHeader('cache-control', 'no-store');
	response.once('finish', () => {
		if (entry.outcome !== 'waiting') return;
		entry.outcome = response.statusCode;
		entry.replayed = response.getHeader('idempotent-replayed') === 'true';
	});
	response.once('close', () => {
		if (entry.outcome !== 'waiting') return;
		const {socket} = request;
		entry.outcome = socket.readableEnded || socket.errored ? 'gave-up' : 'dropped';
	});
}

const TYPES: Record<string, string> = {
	'.html': 'text/html; charset=utf-8',
	'.js': 'text/javascript; charset=utf-8',
	'.css': 'text/css; charset=utf-8',
	'.svg': 'image/svg+xml',
	'.png': 'image/png',
	'.ico': 'image/x-icon',
	'.json': 'application/json',
	'.map': 'application/json',
};

export function json(response: ServerResponse, status: number, value: unknown): true {
	response.writeHead(status, {'content-type': 'application/json', 'cache-control': 'no-store'});
	response.end(JSON.stringify(value));
	return true;
}

/** A small JSON body (a chaos action), or undefined: one over `limit` bytes is not read further. */
export async function readJson(request: IncomingMessage, limit = 1024): Promise<unknown> {
	const chunks: Buffer[] = [];
	let size = 0;
	for await (const chunk of request) {
		size += (chunk as Buffer).length;
		if (size > limit) {
			request.destroy();
			return undefined;
		}

		chunks.push(chunk as Buffer);
	}

	try {
		return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
	} catch {
		return undefined;
	}
}

export async function serveFile(root: string, pathname: string, response: ServerResponse): Promise<true> {
	// `root` is resolved (no trailing separator); nothing outside it is served.
	let decoded: string;
	try {
		decoded = decodeURIComponent(pathname);
	} catch {
		return json(response, 400, {error: 'bad path'});
	}

	const relative = normalize(decoded).replace(/^[/\\]+/, '');
	let file = resolve(root, relative === '' ? 'index.html' : relative);
	if (!file.startsWith(root + sep)) return json(response, 404, {error: 'not found'});

	// A path without an extension is a page of the single-page app.
	if (extname(file) === '') file = join(root, 'index.html');
	try {
		const content = await readFile(file);
		const type = TYPES[extname(file)] ?? 'application/octet-stream';
		response.writeHead(200, {'content-type': type, 'cache-control': type.startsWith('text/html') ? 'no-store' : 'public, max-age=3600'});
		response.end(content);
	} catch {
		if (extname(file) === '.html') {
			response.writeHead(503, {'content-type': 'text/plain; charset=utf-8'});
			response.end(`The example is not built (${file} is missing). Run \`npm run demo\` (or \`npm run demo:vue\`), which builds it first.\n`);
		} else {
			json(response, 404, {error: 'not found'});
		}
	}

	return true;
}

/**
 * Starts the demo on one local port and resolves once it listens.
 *
 * @example
 * import {startDemoServer} from './examples/server/demo-server.ts';
 *
 * const demo = await startDemoServer({port: 0});
 * console.log(demo.url);
 * await demo.close();
 */
export async function startDemoServer({port = 5173, root = EXAMPLE_DIST}: DemoServerOptions = {}): Promise<DemoServer> {
	const base = resolve(root);
	let down = false;
	let requests = 0;
	const recent: LoggedRequest[] = [];

	const chaos = (action: ChaosAction): boolean => {
		if (action === 'down' || action === 'up') {
			down = action === 'down';
		} else if (action === 'reset') {
			down = false;
			requests = 0;
			recent.length = 0;
			// A reset that also wiped the keys made a Retry deliver its email again, unannounced.
			api.reset({keys: false});
		} else if (action === 'forget-keys') {
			api.forgetKeys();
		} else if (Object.hasOwn(CHAOS, action)) {
			api.faults.push(CHAOS[action as keyof typeof CHAOS]);
		} else {
			return false;
		}

		return true;
	};

	const stats = (): DemoStats => ({
		delivered: api.totalEffects,
		requests,
		inFlight: api.inFlight,
		queued: [...api.faults],
		down,
		recent: recent.map(entry => ({...entry})),
	});

	const serve = async (request: IncomingMessage, response: ServerResponse): Promise<boolean> => {
		const {pathname} = new URL(request.url ?? '/', 'http://localhost');
		const method = request.method ?? 'GET';
		if (pathname === '/api/contact') {
			if (method !== 'POST') return json(response, 405, {error: 'use POST'});
			requests++;
			track(request, response, recent);
			return false;
		}

		if (pathname === '/demo/stats' && method === 'GET') return json(response, 200, stats());
		if (pathname === '/demo/chaos' && method === 'POST') {
			const body = await readJson(request) as {action?: unknown} | undefined;
			const action = body?.action;
			if (typeof action !== 'string' || !chaos(action as ChaosAction)) {
				return json(response, 400, {error: 'unknown action', reason: `expected one of ${[...Object.keys(CHAOS), 'down', 'up', 'reset', 'forget-keys'].join(', ')}; got ${JSON.stringify(action)}`});
			}

			return json(response, 200, stats());
		}

		if (method !== 'GET' && method !== 'HEAD') return json(response, 404, {error: 'not found'});
		return serveFile(base, pathname, response);
	};

	const api: ContractServer = new ContractServer({
		serve,
		// Pace the client while a slow delivery runs, so its retries outlast the work.
		conflictRetryAfter: 1,
		// "Check whether it arrived": the server answers a check of a key. Its margin for the page's
		// clock is 0 (one machine; the page says how old its key is by its own clock, too), so that a
		// check closes a key made a moment after the demo started or forgot its keys.
		checks: true,
		faultFor: () => (down ? {type: 'error-before', status: 503} : undefined),
		work(body) {
			const reason = refusal(body);
			if (reason) return {status: 400, body: JSON.stringify({error: 'invalid message', reason})};
			// The effect is counted after this answer: this delivery is number total + 1.
			const delivered = api.totalEffects + 1;
			return {status: 201, body: JSON.stringify({id: `msg-${delivered}`, delivered})};
		},
	});
	await api.listen(port);
	return {
		url: api.url,
		api,
		close: async () => api.close(),
	};
}

/** Why PostgreSQL does not answer at `url` within a few seconds, or undefined when it does. */
async function postgresRefusal(url: string): Promise<string | undefined> {
	const {default: pg} = await import('pg');
	const client = new pg.Client({connectionString: url, connectionTimeoutMillis: 3000});
	try {
		await client.connect();
		return undefined;
	} catch (error) {
		return error instanceof Error ? error.message || String(error) : String(error);
	} finally {
		await client.end().catch(() => undefined);
	}
}

async function main(): Promise<void> {
	const port = Number(process.env.PORT ?? 5173);
	if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new TypeError(`Expected \`PORT\` to be a port number, got ${process.env.PORT}`);
	const {example, database} = parseArgs({options: {example: {type: 'string', default: 'react'}, database: {type: 'string'}}}).values;
	if (!Object.hasOwn(EXAMPLE_DISTS, example)) throw new TypeError(`Expected \`--example\` to be one of ${Object.keys(EXAMPLE_DISTS).join(', ')}, got ${example}`);
	const root = EXAMPLE_DISTS[example as keyof typeof EXAMPLE_DISTS];
	// The full mode, with a PostgreSQL URL (`DATABASE_URL` or `--database`) where PostgreSQL answers.
	const databaseUrl = database ?? process.env.DATABASE_URL;
	const refused = databaseUrl === undefined ? undefined : await postgresRefusal(databaseUrl);
	const full = databaseUrl !== undefined && refused === undefined;
	if (refused !== undefined) console.log(`\n  No PostgreSQL at ${databaseUrl} (${refused}): the demo runs on its own, without the job queue and the mail server.`);
	const started = full ? (await import('./full-demo.js')).startFullDemo({databaseUrl, port, root}) : startDemoServer({port, root});
	const demo = await started.catch((error: unknown) => {
		if ((error as {code?: unknown}).code !== 'EADDRINUSE') throw error;
		throw new Error(`Port ${port} is in use. Pick another with PORT=5174 npm run demo, or PORT=0 for any free port.`, {cause: error});
	});
	console.log(`\n  sendonce demo (${example}${full ? ', full: PostgreSQL, job queue, mail server' : ''}): ${demo.url}/\n`);
	console.log(full
		? '  Press Send, break the network, the worker or the mail server with the chaos panel, and watch the emails the mail server received.'
		: '  Press Send, break the network with the chaos panel, and watch the count of emails delivered.');
	console.log('  Ctrl+C to stop.\n');
	const stop = () => {
		void demo.close().then(() => process.exit(0));
	};

	process.once('SIGINT', stop);
	process.once('SIGTERM', stop);
}

// Not awaited: full-demo.ts imports this module, which must have finished evaluating by then.
if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
	void main().catch((error: unknown) => {
		console.error(error instanceof Error ? error.message : error);
		process.exit(1);
	});
}
