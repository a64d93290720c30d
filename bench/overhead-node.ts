import {randomUUID} from 'node:crypto';
import ky from 'ky';
import {createClient} from '../src/index.js';
import {mean, median} from './stats.js';
import type {BenchServer} from './server.js';

export interface OverheadFigures {
	label: string;
	intents: number;
	median: number;
	mean: number;
}

export interface NodeOverhead {
	sendonce: OverheadFigures;
	ky: OverheadFigures;
	/** sendonce's median per intent over ky's. */
	ratio: number;
	/** The same, of the means. */
	meanRatio: number;
}

/**
 * Sequential intents on loopback, no faults: sendonce with the memory store against plain ky
 * sending the same body with an `Idempotency-Key` (so the server's work is the same), in
 * alternating blocks so that drift (JIT, GC, a busy neighbour) hits both alike.
 */
export async function nodeOverhead(server: BenchServer, {intents, warmup, block = 100}: {intents: number; warmup: number; block?: number}): Promise<NodeOverhead> {
	const url = `${await server.open()}/orders/0`;
	const client = createClient({store: 'memory'});
	let serial = 0;
	const order = (kind: string) => ({item: 'book', order: `${kind}-${serial++}`, total: 42});
	const runners = {
		sendonce: async () => {
			const intent = await client.intent(`order-${serial}`, {url, json: order('sendonce')});
			const result = await intent.send();
			if (result.status !== 'succeeded') throw new Error(`sendonce: ${result.status}`);
		},
		ky: async () => {
			await ky.post(url, {json: order('ky'), headers: {'Idempotency-Key': randomUUID()}}).json();
		},
	};
	const times: Record<keyof typeof runners, number[]> = {sendonce: [], ky: []};
	const run = async (name: keyof typeof runners, count: number, keep: boolean) => {
		for (let index = 0; index < count; index++) {
			const begin = performance.now();
			await runners[name]();
			if (keep) times[name].push(performance.now() - begin);
		}
	};

	await run('sendonce', warmup, false);
	await run('ky', warmup, false);
	for (let done = 0; done < intents; done += block) {
		const count = Math.min(block, intents - done);
		await run('sendonce', count, true);
		await run('ky', count, true);
	}

	const figures = (name: keyof typeof runners, label: string): OverheadFigures => ({label, intents, median: median(times[name]), mean: mean(times[name])});
	const sendonce = figures('sendonce', 'sendonce, memory store');
	const plain = figures('ky', 'ky.post with an Idempotency-Key');
	return {sendonce, ky: plain, ratio: sendonce.median / plain.median, meanRatio: sendonce.mean / plain.mean};
}
