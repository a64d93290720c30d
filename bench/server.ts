import {fork, type ChildProcess} from 'node:child_process';
import {fileURLToPath} from 'node:url';
import type {Command, ServerStats} from './server-process.js';

export type {ServerStats} from './server-process.js';

/** Options of a fresh contract server: the fault rate, and pages to serve on its origin. */
export interface OpenOptions {
	rate?: number;
	seed?: number;
	slowMs?: number;
	site?: Record<string, {type: string; body: string}>;
}

/** The contract server running in a child process (`server-process.ts`). */
export class BenchServer {
	readonly #child: ChildProcess;
	readonly #pending = new Map<number, {resolve(value: unknown): void; reject(error: Error): void}>();
	#next = 0;

	private constructor(child: ChildProcess) {
		this.#child = child;
		child.on('message', (message: {id?: number; value?: unknown; error?: string}) => {
			if (message.id === undefined) return;
			const pending = this.#pending.get(message.id);
			this.#pending.delete(message.id);
			if (message.error === undefined) pending?.resolve(message.value);
			else pending?.reject(new Error(`contract server: ${message.error}`));
		});
		child.on('exit', code => {
			for (const pending of this.#pending.values()) pending.reject(new Error(`the contract server exited (${code})`));
			this.#pending.clear();
		});
	}

	static async start(): Promise<BenchServer> {
		const child = fork(fileURLToPath(new URL('server-process.ts', import.meta.url)), {execArgv: ['--import', 'tsx']});
		await new Promise<void>((resolve, reject) => {
			child.once('message', () => resolve());
			child.once('error', reject);
			child.once('exit', code => reject(new Error(`the contract server exited before it was ready (${code})`)));
		});
		return new BenchServer(child);
	}

	/** A new server (the previous one is closed): no keys, no counts. Resolves to its URL. */
	async open({rate = 0, seed = 1, slowMs = 600, site}: OpenOptions = {}): Promise<string> {
		return this.#call({type: 'open', rate, seed, slowMs, ...(site ? {site} : {})}) as Promise<string>;
	}

	/** Counts since `open`, after the work in flight has finished. */
	async stats(): Promise<ServerStats> {
		return this.#call({type: 'stats'}) as Promise<ServerStats>;
	}

	async close(): Promise<void> {
		await this.#call({type: 'close'}).catch(() => undefined);
	}

	async #call(command: Command): Promise<unknown> {
		const id = this.#next++;
		return new Promise((resolve, reject) => {
			this.#pending.set(id, {resolve, reject});
			this.#child.send({id, command});
		});
	}
}
