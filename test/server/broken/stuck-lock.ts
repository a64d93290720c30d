/*
 * Breaks the claim's end: it claims the key atomically (a lock for 24 hours, as `SET NX EX
 * 86400` would), but a request cancelled mid-work — here, when its client disconnects; in
 * production, when its process crashes — neither finishes nor releases it. Every retry of that
 * key gets 409 for a day. Otherwise it does what the honest server does, on node:http.
 */
import {createServer} from 'node:http';
import {parseKeyHeader} from '../../../src/server.js';
import {closeNow, listenOnLoopback} from '../loopback.js';

const WORK_MS = 150;
const DAY = 86_400_000;

type Claim = {state: 'running'; body: string; until: number} | {state: 'done'; body: string; answer: string};

/** Starts it on a free local port: `POST /orders`, counted per `'<authorization> <key>'`. */
export async function startStuckLock(): Promise<{url: string; executions: Map<string, number>; close(): Promise<void>}> {
	const executions = new Map<string, number>();
	const claims = new Map<string, Claim>();
	let next = 0;
	const server = createServer((request, response) => {
		const json = (status: number, body: unknown, headers: Record<string, string> = {}) => response.writeHead(status, {'content-type': 'application/json', ...headers}).end(JSON.stringify(body));
		const header = request.headers['idempotency-key'];
		const parsed = parseKeyHeader(typeof header === 'string' ? header : null);
		const chunks: Buffer[] = [];
		request.on('data', (chunk: Buffer) => chunks.push(chunk));
		request.on('end', () => {
			if (parsed.type !== 'key') return json(400, {title: 'Idempotency key missing or malformed'});
			const key = `${request.headers.authorization ?? ''} ${parsed.key}`;
			const body = Buffer.concat(chunks).toString('utf8');
			const claim = claims.get(key);
			if (claim && claim.body !== body) return json(422, {title: 'Key reused with another body'});
			if (claim?.state === 'done') return response.writeHead(201, {'content-type': 'application/json', 'idempotent-replayed': 'true'}).end(claim.answer);
			if (claim && claim.until > Date.now()) return json(409, {title: 'A request with this key is in progress'}, {'retry-after': '1'});
			claims.set(key, {state: 'running', body, until: Date.now() + DAY});
			const work = setTimeout(() => {
				executions.set(key, (executions.get(key) ?? 0) + 1);
				const answer = JSON.stringify({id: `ord_${++next}`, ...JSON.parse(body) as object});
				claims.set(key, {state: 'done', body, answer});
				response.writeHead(201, {'content-type': 'application/json'}).end(answer);
			}, WORK_MS);
			// Cancelled with its client: the work stops, the claim stays.
			response.once('close', () => {
				if (!response.writableFinished) clearTimeout(work);
			});
		});
	});
	const origin = await listenOnLoopback(server);
	return {url: `${origin}/orders`, executions, close: async () => closeNow(server)};
}
