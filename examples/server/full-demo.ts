/**
 * The demo's full mode (`DATABASE_URL=postgres://… npm run demo`): the same page and chaos panel
 * in front of the outbox example's whole chain (examples/outbox): the web process (Express,
 * `sendonce/server` in transactional mode on PostgreSQL, the email job added in the key's
 * transaction), the worker (graphile-worker and nodemailer) and a mail server that keeps what it
 * receives (smtp-server), each a process of its own. The panel counts the emails the mail server
 * received, and shows apart the copies a worker sent again (same Message-ID).
 */
import {createServer, request as httpRequest, type IncomingMessage, type ServerResponse} from 'node:http';
import {resolve} from 'node:path';
import {startChain, type Chain} from '../outbox/chain.js';
import {closeNow, listenOnLoopback} from '../../test/server/loopback.js';
import {CHAOS, EXAMPLE_DIST, json, readJson, serveFile, track, type ChaosAction, type DemoStats, type Fault, type LoggedRequest} from './demo-server.js';

export interface FullDemoOptions {
	databaseUrl: string;
	/** 0 picks a free port. @default 5173 */
	port?: number;
	/** The built page. @default EXAMPLE_DIST */
	root?: string;
	/** Where the chain's processes write their output. @default 'inherit' */
	output?: 'inherit' | 'ignore';
}

export interface FullDemoServer {
	readonly url: string;
	readonly chain: Chain;
	stats(): Promise<DemoStats>;
	close(): Promise<void>;
}

const MAIL_ACTIONS = ['mail-lose-reply', 'kill-worker'] as const;

export async function startFullDemo({databaseUrl, port = 5173, root = EXAMPLE_DIST, output = 'inherit'}: FullDemoOptions): Promise<FullDemoServer> {
	const base = resolve(root);
	// The page's "Check whether it arrived" checks keys made a moment after the demo started: one
	// machine, one clock (as in the embedded mode).
	const chain = await startChain({databaseUrl, output, web: {DEMO_SLOW: '1', CLOCK_SKEW: '0'}, keepWorker: true});
	const faults: Fault[] = [];
	const recent: LoggedRequest[] = [];
	let down = false;
	let requests = 0;
	let inFlight = 0;
	let baseline = 0;

	const stats = async (): Promise<DemoStats> => {
		const mail = (await chain.received()).slice(baseline);
		const ids = new Set(mail.map(({messageId}) => messageId));
		return {
			delivered: ids.size,
			requests,
			inFlight,
			queued: [...faults],
			down,
			recent: recent.map(entry => ({...entry})),
			mail: {received: mail.length, resent: mail.length - ids.size, jobsLeft: await chain.jobsLeft()},
		};
	};

	const chaos = async (action: ChaosAction): Promise<boolean> => {
		if (action === 'down' || action === 'up') down = action === 'down';
		else if (action === 'reset') {
			down = false;
			requests = 0;
			recent.length = 0;
			faults.length = 0;
			baseline = (await chain.received()).length;
		} else if (action === 'forget-keys') await chain.forgetKeys();
		else if (action === 'mail-lose-reply') chain.tell('sink', 'lose-next-reply');
		else if (action === 'kill-worker') chain.tell('worker', 'die-after-send');
		else if (Object.hasOwn(CHAOS, action)) faults.push(CHAOS[action as keyof typeof CHAOS]);
		else return false;
		return true;
	};

	/** `/api/contact` to the web process, through the fault drawn for it. */
	const api = (incoming: IncomingMessage, outgoing: ServerResponse): void => {
		requests++;
		track(incoming, outgoing, recent);
		const fault = faults.shift() ?? (down ? {type: 'error-before', status: 503} as const : undefined);
		if (fault?.type === 'error-before') {
			json(outgoing, fault.status ?? 503, {error: 'unavailable'});
			return;
		}

		if (fault?.type === 'drop-before') {
			incoming.socket.destroy();
			return;
		}

		// Only this front says how slow the work is.
		const headers = {...incoming.headers};
		delete headers['x-demo-slow'];
		if (fault?.type === 'slow') headers['x-demo-slow'] = String(fault.ms ?? 300);
		inFlight++;
		let done = false;
		const finish = () => {
			if (!done) inFlight--;
			done = true;
		};

		const upstream = httpRequest(new URL(incoming.url ?? '/', chain.webUrl), {method: incoming.method, headers}, answer => {
			const chunks: Buffer[] = [];
			answer.on('data', (chunk: Buffer) => chunks.push(chunk));
			answer.on('error', () => {
				finish();
				incoming.socket.destroy();
			});
			answer.on('end', () => {
				finish();
				// The work is done (committed); its reply is lost on the way back.
				if (fault?.type === 'lose-reply') incoming.socket.destroy();
				else outgoing.writeHead(answer.statusCode ?? 502, answer.headers).end(Buffer.concat(chunks));
			});
		});
		upstream.on('error', () => {
			finish();
			incoming.socket.destroy();
		});
		incoming.pipe(upstream);
	};

	const server = createServer((request, response) => {
		void (async () => {
			const {pathname} = new URL(request.url ?? '/', 'http://localhost');
			const method = request.method ?? 'GET';
			if (pathname === '/api/contact') {
				if (method === 'POST') api(request, response);
				else json(response, 405, {error: 'use POST'});
				return;
			}

			if (pathname === '/demo/stats' && method === 'GET') {
				json(response, 200, await stats());
				return;
			}

			if (pathname === '/demo/chaos' && method === 'POST') {
				const body = await readJson(request) as {action?: unknown} | undefined;
				const action = body?.action;
				if (typeof action !== 'string' || !await chaos(action as ChaosAction)) {
					json(response, 400, {error: 'unknown action', reason: `expected one of ${[...Object.keys(CHAOS), 'down', 'up', 'reset', 'forget-keys', ...MAIL_ACTIONS].join(', ')}; got ${JSON.stringify(action)}`});
					return;
				}

				json(response, 200, await stats());
				return;
			}

			if (method !== 'GET' && method !== 'HEAD') json(response, 404, {error: 'not found'});
			else await serveFile(base, pathname, response);
		})().catch((error: unknown) => {
			console.error('demo:', error instanceof Error ? error.message : error);
			if (!response.headersSent) json(response, 500, {error: 'demo', reason: 'the demo could not answer (is PostgreSQL up?)'});
		});
	});
	server.keepAliveTimeout = 1000;
	let url: string;
	try {
		url = await listenOnLoopback(server, port);
	} catch (error) {
		await chain.close();
		throw error;
	}

	return {
		url,
		chain,
		stats,
		async close() {
			await closeNow(server);
			await chain.close();
		},
	};
}
