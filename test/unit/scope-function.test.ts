import {readFileSync} from 'node:fs';
import {describe, expect, test} from 'vitest';
import type {IntentState} from '../../src/index.js';
import {chooseIntent, type Held} from '../../src/core/scope.js';

/*
 * docs/guide.md's scope table is the contract; `chooseIntent` is the code. Every record a scope
 * can hold (each state, attempts, inside or past its window, made in this page or not) falls in
 * exactly one row, read from the row's words; the function must give that row's cell, for the
 * same body and a different one, and a new intent for `replace: true` whatever is held.
 */
const guide = readFileSync(new URL('../../docs/guide.md', import.meta.url), 'utf8');
const section = guide.slice(guide.indexOf('## The scope table'));
// The section's first table: its lines up to the first line that is not one, less the header.
const lines = section.split('\n');
const first = lines.findIndex(line => line.startsWith('| '));
const end = lines.findIndex((line, index) => index > first && !line.startsWith('|'));
const rows = lines.slice(first + 2, end).map(line => line.split('|').slice(1, -1).map(cell => cell.trim()));
const table = new Map(rows.map(([what, same, different]) => [what!, {same: same!, different: different!}]));

/** The row a held record is in, by the words of the table's first column. */
function rowOf(held: Held | undefined, now: number): string {
	if (!held || held.state === 'failed' || (held.state === 'succeeded' && !held.mine)) return 'nothing, or a settled intent';
	if (held.state === 'succeeded') return 'delivered by the service worker, pressed in this page';
	if (held.attempts === 0 && (held.state === 'expired' || now >= held.expiresAt)) return 'never sent, and past its `window` (or `expired`)';
	return held.attempts === 0 ? 'unsettled, never sent' : 'unsettled, sent at least once';
}

/** What a cell says `client.intent()` gives. */
function cellSays(cell: string): 'held' | 'new' | 'conflict' {
	if (cell.startsWith('throws `UnresolvedIntentError`')) return 'conflict';
	if (cell.includes('(same key')) return 'held';
	if (cell.includes('new key')) return 'new';
	throw new Error(`The scope table has a cell the test cannot read: ${cell}`);
}

const NOW = 1_000_000;
const STATES: IntentState[] = ['pending', 'sending', 'unresolved', 'expired', 'succeeded', 'failed'];
const held: Array<Held | undefined> = [undefined];
for (const state of STATES) {
	for (const attempts of [0, 1, 3]) {
		// Only pending intents have never been attempted: the write-ahead counts the first attempt.
		if (attempts === 0 && state !== 'pending' && state !== 'expired') continue;
		for (const expiresAt of [NOW + 60_000, NOW, NOW - 1]) {
			for (const mine of [true, false]) held.push({state, attempts, expiresAt, fingerprint: 'f1', mine});
		}
	}
}

describe('chooseIntent is docs/guide.md\'s scope table', () => {
	test('the table has the rows the test reads', () => {
		expect([...table.keys()]).toEqual([
			'nothing, or a settled intent',
			'never sent, and past its `window` (or `expired`)',
			'unsettled, never sent',
			'unsettled, sent at least once',
			'delivered by the service worker, pressed in this page',
		]);
	});

	test.each(held.map(record => [record ? `${record.state}, ${record.attempts} attempts, ${record.expiresAt - NOW} ms left, ${record.mine ? 'made here' : 'seen in the store'}` : 'nothing', record] as const))('%s: the cell of its row', (_name, record) => {
		const row = table.get(rowOf(record, NOW))!;
		expect(chooseIntent(record, 'f1', false, NOW)).toBe(cellSays(row.same));
		expect(chooseIntent(record, 'f2', false, NOW)).toBe(cellSays(row.different));
		// `replace: true`: always a new intent (the last row's words say it for a conflict).
		expect(chooseIntent(record, 'f1', true, NOW)).toBe('new');
		expect(chooseIntent(record, 'f2', true, NOW)).toBe('new');
	});

	test('every row is reached by some record', () => {
		expect(new Set(held.map(record => rowOf(record, NOW)))).toEqual(new Set(table.keys()));
	});
});
