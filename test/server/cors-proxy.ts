import {createServer, request as httpRequest, type Server} from 'node:http';
import {closeNow, listenOnLoopback} from './loopback.js';

/** What the proxy's server allows a page on another origin. */
export interface CorsPolicy {
	/** `Access-Control-Allow-Origin`. */
	allowOrigin: string;
	/** Request headers the preflight allows (lower case). */
	allowHeaders: string[];
	/** Response headers the page may read (`Access-Control-Expose-Headers`). */
	exposeHeaders: string[];
}

/**
 * An HTTP proxy that puts a CORS policy in front of a server that has none: it answers
 * preflights itself, refusing a request header the policy does not allow as a server would
 * (no `Access-Control-Allow-Headers` for it), and adds the policy's headers to every answer
 * it forwards. Its port makes it another origin than the upstream's pages.
 */
export class CorsProxy {
	policy: CorsPolicy;
	/** Preflights answered, and whether each allowed the request. */
	readonly preflights: Array<{allowed: boolean}> = [];
	readonly #upstream: string;
	readonly #server: Server;
	#url = '';

	constructor(upstream: string, policy: CorsPolicy) {
		this.#upstream = upstream;
		this.policy = policy;
		this.#server = createServer((incoming, outgoing) => {
			const cors = {'access-control-allow-origin': this.policy.allowOrigin, vary: 'origin'};
			if (incoming.method === 'OPTIONS') {
				const asked = String(incoming.headers['access-control-request-headers'] ?? '').split(',').map(name => name.trim().toLowerCase()).filter(Boolean);
				const allowed = asked.every(name => this.policy.allowHeaders.includes(name));
				this.preflights.push({allowed});
				outgoing.writeHead(204, {
					...cors,
					'access-control-allow-methods': 'POST, PUT, PATCH, DELETE',
					...(allowed && asked.length > 0 ? {'access-control-allow-headers': asked.join(', ')} : {}),
				}).end();
				return;
			}

			const target = new URL(incoming.url ?? '/', this.#upstream);
			const forward = httpRequest(target, {method: incoming.method, headers: incoming.headers}, answer => {
				const expose = this.policy.exposeHeaders.length > 0 ? {'access-control-expose-headers': this.policy.exposeHeaders.join(', ')} : {};
				outgoing.writeHead(answer.statusCode ?? 502, {...answer.headers, ...cors, ...expose});
				answer.pipe(outgoing);
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
