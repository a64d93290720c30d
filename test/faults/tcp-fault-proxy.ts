import {createServer, connect, type Server, type Socket} from 'node:net';

/** A store fault, as the TCP proxy plays it on every connection it carries. */
export type StoreFault =
	| {type: 'latency'; ms: number; for: number}
	| {type: 'stall'; for: number}
	| {type: 'drop'}
	| {type: 'reset'}
	/**
	 * The next command (whose bytes contain `contains`, where given) reaches the server; its reply
	 * is lost with the connection, which closes: a cut right after a command was forwarded.
	 */
	| {type: 'lose-reply'; contains?: string};

interface Link {
	client: Socket;
	upstream: Socket;
	/** A command was forwarded whose reply is to be lost. */
	losing?: boolean;
}

/**
 * A TCP proxy between server processes and Redis or PostgreSQL that injects faults into every
 * connection it carries: added latency (each chunk delayed, in order), a stall (nothing passes
 * either way, then everything held passes at once), a dropped connection (both ends closed) or a
 * reset (RST on both ends).
 */
export class TcpFaultProxy {
	readonly #server: Server;
	readonly #links = new Set<Link>();
	#latency = 0;
	#stalledUntil = 0;
	/** What the next command whose reply is lost contains (`''`: anything); undefined: none is. */
	#loseReplyTo: string | undefined;
	#port = 0;

	constructor(upstream: {host: string; port: number}) {
		this.#server = createServer(client => {
			const upstreamSocket = connect(upstream);
			const link: Link = {client, upstream: upstreamSocket};
			this.#links.add(link);
			const forget = () => {
				this.#links.delete(link);
				client.destroy();
				upstreamSocket.destroy();
			};

			client.on('error', forget).on('close', forget);
			upstreamSocket.on('error', forget).on('close', forget);
			this.#pipe(client, upstreamSocket, chunk => {
				if (this.#loseReplyTo !== undefined && chunk.includes(this.#loseReplyTo)) {
					this.#loseReplyTo = undefined;
					link.losing = true;
				}

				return true;
			});
			this.#pipe(upstreamSocket, client, () => {
				if (!link.losing) return true;
				client.destroy();
				return false;
			});
		});
	}

	/** Forwards `from` to `to`, each chunk after the current latency and any stall, keeping their order. */
	#pipe(from: Socket, to: Socket, pass: (chunk: Buffer) => boolean): void {
		let last = Promise.resolve();
		from.on('data', (chunk: Buffer) => {
			const arrived = Date.now();
			last = last.then(async () => {
				for (;;) {
					const wait = Math.max(arrived + this.#latency, this.#stalledUntil) - Date.now();
					if (wait <= 0) break;
					await new Promise(resolve => setTimeout(resolve, wait));
				}

				if (!to.destroyed && pass(chunk)) to.write(chunk);
			});
		});
		from.on('end', () => {
			void last.then(() => to.end());
		});
	}

	get port(): number {
		return this.#port;
	}

	async listen(): Promise<this> {
		await new Promise<void>(resolve => this.#server.listen(0, '127.0.0.1', resolve));
		this.#port = (this.#server.address() as {port: number}).port;
		return this;
	}

	/** Plays one fault; latency and stalls end on their own after `for` ms. */
	inject(fault: StoreFault): void {
		switch (fault.type) {
			case 'latency': {
				this.#latency = fault.ms;
				setTimeout(() => {
					this.#latency = 0;
				}, fault.for).unref();
				break;
			}

			case 'stall': {
				this.#stalledUntil = Date.now() + fault.for;
				break;
			}

			case 'drop': {
				for (const {client, upstream} of this.#links) {
					client.end();
					upstream.end();
				}

				break;
			}

			case 'lose-reply': {
				this.#loseReplyTo = fault.contains ?? '';
				break;
			}

			case 'reset': {
				for (const {client, upstream} of this.#links) {
					client.resetAndDestroy();
					upstream.resetAndDestroy();
				}

				break;
			}
		}
	}

	/** Ends every fault in play. */
	heal(): void {
		this.#latency = 0;
		this.#stalledUntil = 0;
	}

	async close(): Promise<void> {
		for (const {client, upstream} of this.#links) {
			client.destroy();
			upstream.destroy();
		}

		await new Promise<void>(resolve => {
			this.#server.close(() => resolve());
		});
	}
}
