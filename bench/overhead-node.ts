import {randomUUID} from 'node:crypto';
import ky from 'ky';
import {createClient} from '../src/index.js';
import {mean, median, spread, type Spread} from './stats.js';
import type {BenchServer} from './server.js';

export interface OverheadFigures {
	label: string;
	intents: number;
	median: number;
	mean: number;
}

export interface NodeOverhead {
	/** `client.send()`, memory store. */
	send: OverheadFigures;
	/** `client.intent()` then `intent.send()`, memory store. */
	intent: OverheadFigures;
	ky: OverheadFigures;
	fetch: OverheadFigures;
	/** `client.send()`'s median over ky's and over fetch's, per round. */
	ratio: {ky: Spread; fetch: Spread};
	rounds: number;
}

/**
 * Sequential intents on loopback, no faults: sendonce with the memory store against plain ky
 * and plain fetch sending the same body with an `Idempotency-Key` (so the server's work is the
 * same), in alternating blocks so that drift (JIT, GC, a busy neighbour) hits all alike.
 * `intents` per client are split into `rounds`, each giving its own ratios: their spread.
 */
export async function nodeOverhead(server: BenchServer, {intents, warmup, rounds, block = 100}: {intents: number; warmup: number; rounds: number; block?: number}): Promise<NodeOverhead> {
	const url = `${await server.open()}/orders/0`;
	const client = createClient({store: 'memory'});
	let serial = 0;
	const order = (kind: string) => ({item: 'book', order: `${kind}-${serial++}`, total: 42});
	const check = (status: string) => {
		if (status !== 'succeeded') throw new Error(`sendonce: ${status}`);
	};

	const runners = {
		send: async () => {
			check((await client.send(`order-${serial}`, {url, json: order('send')})).status);
		},
		intent: async () => {
			const intent = await client.intent(`order-${serial}`, {url, json: order('intent')});
			check((await intent.send()).status);
		},
		ky: async () => {
			await ky.post(url, {json: order('ky'), headers: {'Idempotency-Key': randomUUID()}}).json();
		},
		fetch: async () => {
			const response = await fetch(url, {method: 'POST', headers: {'content-type': 'application/json', 'idempotency-key': randomUUID()}, body: JSON.stringify(order('fetch'))});
			await response.json();
		},
	};
	type Name = keyof typeof runners;
	const names = Object.keys(runners) as Name[];
	const times = Object.fromEntries(names.map(name => [name, [] as number[]])) as Record<Name, number[]>;
	const run = async (name: Name, count: number, keep: boolean) => {
		for (let index = 0; index < count; index++) {
			const begin = performance.now();
			await runners[name]();
			if (keep) times[name].push(performance.now() - begin);
		}
	};

	for (const name of names) await run(name, warmup, false);
	const perRound = Math.ceil(intents / rounds);
	const ratios = {ky: [] as number[], fetch: [] as number[]};
	for (let round = 0; round < rounds; round++) {
		const from = times.send.length;
		for (let done = 0; done < perRound; done += block) {
			for (const name of names) await run(name, Math.min(block, perRound - done), true);
		}

		const roundMedian = (name: Name) => median(times[name].slice(from));
		ratios.ky.push(roundMedian('send') / roundMedian('ky'));
		ratios.fetch.push(roundMedian('send') / roundMedian('fetch'));
	}

	const figures = (name: Name, label: string): OverheadFigures => ({label, intents: times[name].length, median: median(times[name]), mean: mean(times[name])});
	const send = figures('send', 'sendonce client.send(), memory store');
	return {
		send,
		intent: figures('intent', 'sendonce intent() + send(), memory store'),
		ky: figures('ky', 'ky.post with an Idempotency-Key'),
		fetch: figures('fetch', 'fetch with an Idempotency-Key'),
		ratio: {ky: spread(ratios.ky), fetch: spread(ratios.fetch)},
		rounds,
	};
}
