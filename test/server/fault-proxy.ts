import {createServer, request as httpRequest, type Server} from 'node:http';
import type {Fault} from './contract-server.js';
import {closeNow, listenOnLoopback} from './loopback.js';

/**
 * A fault-injecting HTTP proxy, to put in front of a server we did not write: it forwards
 * each request upstream and then, per the next queued fault, loses the reply (drops the
 * client's connection after the upstream answered), swaps the answer for a 5xx after the
 * work, or answers a 5xx / drops without forwarding. A `slow` fault is passed upstream as an
 * `x-fault-slow-ms` header, for an upstream that can make its work slow.
 */
export class FaultProxy {
	readonly faults: Fault[] = [];
	readonly #upstream: string;
	readonly #server: Server;
	#url = '';

	constructor(upstream: string) {
		this.#upstream = upstream;
		this.#server = createServer((incoming, outgoing) => {
			const fault = this.faults.shift();
			if (fault?.type === 'error-before') {
				outgoing.writeHead(fault.status ?? 503).end();
				return;
			}

			if (fault?.type === 'drop-before') {
				incoming.socket.destroy();
				return;
			}

			const target = new URL(incoming.url ?? '/', this.#upstream);
			// The proxy cannot slow the upstream's work: it asks, and an upstream that reads the header obliges.
			const headers = fault?.type === 'slow' ? {...incoming.headers, 'x-fault-slow-ms': String(fault.ms ?? 300)} : incoming.headers;
			const forward = httpRequest(target, {method: incoming.method, headers}, answer => {
				const chunks: Buffer[] = [];
				answer.on('data', (chunk: Buffer) => chunks.push(chunk));
				answer.on('end', () => {
					if (fault?.type === 'lose-reply') {
						incoming.socket.destroy();
						return;
					}

					if (fault?.type === 'error-after') {
						outgoing.writeHead(fault.status ?? 502).end();
						return;
					}

					outgoing.writeHead(answer.statusCode ?? 502, answer.headers).end(Buffer.concat(chunks));
				});
			});
			forward.on('error', () => incoming.socket.destroy());
			incoming.pipe(forward);
		});
	}

	get url(): string {
		return this.#url;
	}

	async listen(): Promise<this> {
		this.#url = await listenOnLoopback(this.#server);
		return this;
	}

	async close(): Promise<void> {
		await closeNow(this.#server);
	}
}
