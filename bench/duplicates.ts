import {percentile, pool} from './stats.js';
import type {BenchServer} from './server.js';
import {POLICY, VARIANTS, type Outcome} from './variants.js';

/** One variant at one fault rate. */
export interface SweepRow {
	variant: string;
	label: string;
	rate: number;
	intents: number;
	/** Effects the server performed. */
	effects: number;
	/** Sum over orders of max(0, effects − 1). */
	duplicates: number;
	/** Orders whose work was never done. */
	missing: number;
	succeeded: number;
	/** The client gave up without a definitive answer (sendonce: `unresolved`). */
	unresolved: number;
	failed: number;
	requests: number;
	/** Answers of 409 ("in flight"): only a stable key meets them. */
	conflicts: number;
	p50: number;
	p95: number;
	seconds: number;
}

export interface SweepOptions {
	intents: number;
	rates: readonly number[];
	concurrency: number;
	seed: number;
	onRow?: (row: SweepRow) => void;
}

/** Every variant at every fault rate, each on a fresh server with the same fault schedule. */
export async function sweep(server: BenchServer, {intents, rates, concurrency, seed, onRow}: SweepOptions): Promise<SweepRow[]> {
	const rows: SweepRow[] = [];
	for (const rate of rates) {
		for (const variant of VARIANTS) {
			const url = await server.open({rate, seed, slowMs: POLICY.slowMs});
			const send = variant.prepare(url);
			const times: number[] = [];
			const counts: Record<Outcome, number> = {succeeded: 0, unresolved: 0, failed: 0};
			const started = performance.now();
			await pool(intents, concurrency, async index => {
				const begin = performance.now();
				const outcome = await send(index, {item: 'book', order: `${variant.id}-${rate}-${index}`, total: 42});
				times.push(performance.now() - begin);
				counts[outcome]++;
			});
			const seconds = (performance.now() - started) / 1000;
			const stats = await server.stats();
			const row: SweepRow = {
				variant: variant.id,
				label: variant.label,
				rate,
				intents,
				effects: stats.effects,
				duplicates: stats.duplicates,
				missing: intents - stats.orders,
				...counts,
				requests: stats.requests,
				conflicts: stats.outcomes['409'] ?? 0,
				p50: percentile(times, 0.5),
				p95: percentile(times, 0.95),
				seconds,
			};
			rows.push(row);
			onRow?.(row);
		}
	}

	return rows;
}
