/** The value below which `fraction` of `values` lie (nearest rank); NaN when empty. */
export function percentile(values: readonly number[], fraction: number): number {
	if (values.length === 0) return Number.NaN;
	const sorted = [...values].sort((a, b) => a - b);
	const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(fraction * sorted.length) - 1));
	return sorted[rank]!;
}

export function median(values: readonly number[]): number {
	return percentile(values, 0.5);
}

export function mean(values: readonly number[]): number {
	if (values.length === 0) return Number.NaN;
	let total = 0;
	for (const value of values) total += value;
	return total / values.length;
}

/** Milliseconds with a precision that suits their size. */
export function ms(value: number): string {
	if (!Number.isFinite(value)) return '–';
	if (value >= 100) return value.toFixed(0);
	if (value >= 10) return value.toFixed(1);
	return value.toFixed(2);
}

export function integer(value: number): string {
	return value.toLocaleString('en-US');
}

/** A Markdown table, also readable as plain text on a terminal. */
export function table(header: readonly string[], rows: ReadonlyArray<readonly string[]>, align: ReadonlyArray<'l' | 'r'> = []): string {
	const widths = header.map((cell, column) => Math.max(cell.length, ...rows.map(row => (row[column] ?? '').length)));
	const line = (cells: readonly string[]) => `| ${cells.map((cell, column) => (align[column] === 'r' ? cell.padStart(widths[column]!) : cell.padEnd(widths[column]!))).join(' | ')} |`;
	const rule = `| ${widths.map((width, column) => (align[column] === 'r' ? `${'-'.repeat(width - 1)}:` : '-'.repeat(width))).join(' | ')} |`;
	return [line(header), rule, ...rows.map(row => line(row))].join('\n');
}

/** Runs `task(0 … count-1)` with at most `concurrency` in flight. */
export async function pool(count: number, concurrency: number, task: (index: number) => Promise<void>): Promise<void> {
	let next = 0;
	const worker = async () => {
		while (next < count) {
			const index = next++;
			await task(index);
		}
	};

	await Promise.all(Array.from({length: Math.min(concurrency, count)}, worker));
}

/** One figure over repeated runs: its median, and the lowest and highest run. */
export interface Spread {
	median: number;
	min: number;
	max: number;
	runs: number[];
}

export function spread(runs: readonly number[]): Spread {
	return {median: median(runs), min: Math.min(...runs), max: Math.max(...runs), runs: [...runs]};
}

/** A ratio over repeated runs: `1.02× (0.97–1.08, 5 runs)`. */
export function ratioText({median: middle, min, max, runs}: Spread): string {
	return `${middle.toFixed(2)}× (${min.toFixed(2)}–${max.toFixed(2)}, ${runs.length} runs)`;
}
