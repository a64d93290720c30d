import fc from 'fast-check';
import {expect, test} from 'vitest';
import {decide, type Write} from '../../src/core/decide.js';
import type {IntentRecord} from '../../src/core/record.js';
import {canMove, isSettled} from '../../src/core/state.js';
import type {IntentState} from '../../src/index.js';

/*
 * Every change a page makes to its stored record goes through `decide` (src/core/decide.ts). Its
 * rules, checked over every stored record, page copy and write fast-check generates:
 * - another intent's record is never touched; nothing is written where nothing is stored, but by
 *   the user's own press (`rewrite`);
 * - attempts never go down in the store, but where the page takes back its own attempt that never
 *   left (the store counts what the page counted);
 * - a settled record (the worker's note) is only ever deleted;
 * - what is stored is a move of the state machine from what was stored, or the outcome heard.
 */
const STATES: IntentState[] = ['pending', 'sending', 'unresolved', 'expired', 'succeeded', 'failed', 'not-sent'];
const state = fc.constantFrom(...STATES);

function record(key: string, state: IntentState, attempts: number): IntentRecord {
	return {v: 1, key, scope: 'order', state, request: {url: 'https://api.test/orders', method: 'POST', headers: {}}, fingerprint: 'f', attempts, createdAt: 0, expiresAt: 1e12, updatedAt: 0};
}

const page = fc.tuple(fc.constantFrom('unsettled', ...STATES), fc.integer({min: 0, max: 3})).map(([at, attempts]) => record('k1', at === 'unsettled' ? 'sending' : at as IntentState, attempts));
const stored = fc.option(fc.tuple(fc.constantFrom('k1', 'k2'), state, fc.integer({min: 0, max: 3})).map(([key, at, attempts]) => record(key, at, attempts)), {nil: undefined});
const write: fc.Arbitrary<Write> = fc.oneof(
	fc.record({type: fc.constant('attempt' as const), resume: fc.boolean(), rewrite: fc.boolean()}),
	fc.tuple(state, fc.integer({min: 0, max: 3})).map(([at, attempts]) => ({type: 'withdraw' as const, prior: record('k1', at, attempts)})),
	fc.constantFrom<Write>(
		{type: 'move', action: {type: 'unresolve', cause: {reason: 'aborted'}, at: 1}},
		{type: 'move', action: {type: 'expire', at: 1}},
		{type: 'move', action: {type: 'wait', at: 1}},
		{type: 'move', action: {type: 'settle', state: 'failed', at: 1}},
		// What a check found (issue 33), or a send whose key a check closed: marked where the delete failed.
		{type: 'move', action: {type: 'settle', state: 'not-sent', at: 1}},
	),
	fc.tuple(fc.constantFrom<IntentState>('succeeded', 'failed', 'unresolved', 'expired', 'not-sent'), fc.integer({min: 0, max: 4})).map(([at, attempts]) => ({type: 'heard' as const, action: {type: 'observe' as const, state: at, attempts, at: 1}})),
	fc.record({type: fc.constant('forget' as const), unsent: fc.boolean()}),
);

test('decide keeps its rules for every stored record, page copy and write', () => {
	let written = 0;
	fc.assert(fc.property(stored, page, write, (before, copy, change) => {
		let next: IntentRecord | null | undefined;
		try {
			next = decide(before, copy, change, 2);
		} catch {
			// A move the state machine refuses (the page's copy cannot make it): nothing is written.
			return;
		}

		if (next === undefined) return;
		written++;
		if (before?.key !== copy.key) {
			// Only the user's own press writes where the page's intent is not stored.
			expect(before).toBeUndefined();
			expect(change).toMatchObject({type: 'attempt', rewrite: true});
			expect(next).toMatchObject({key: copy.key, state: 'sending', attempts: copy.attempts + 1});
			return;
		}

		if (next === null) {
			expect(change.type === 'forget' || (change.type === 'heard' && isSettled(change.action.state))).toBe(true);
			if (change.type === 'forget' && change.unsent) expect(before.attempts).toBe(0);
			return;
		}

		expect(isSettled(before.state), `${change.type} wrote over a settled record`).toBe(false);
		// A page stores "not sent" only over an intent whose outcome was unknown, or one being sent (whose send met the closed key).
		if (change.type === 'move' && next.state === 'not-sent') expect(['unresolved', 'expired', 'sending']).toContain(before.state);
		if (change.type === 'withdraw') expect(before.attempts).toBe(copy.attempts);
		else expect(next.attempts).toBeGreaterThanOrEqual(before.attempts);
		if (change.type === 'attempt') expect(next).toMatchObject({state: 'sending', attempts: before.attempts + 1});
		else if (change.type === 'move') expect(canMove(before.state, next.state) || before.state === next.state).toBe(true);
	}), {numRuns: 3000});
	expect(written).toBeGreaterThan(300);
});

test('the write-ahead carries what the page learned of the server\'s checks, over a stored record without it', () => {
	const stored = record('k1', 'unresolved', 1);
	const page = {...record('k1', 'unresolved', 1), checks: 86_400};
	expect(decide(stored, page, {type: 'attempt', resume: false, rewrite: false}, 2)).toMatchObject({state: 'sending', attempts: 2, checks: 86_400});
	expect(decide({...stored, checks: 3600}, record('k1', 'unresolved', 1), {type: 'attempt', resume: false, rewrite: false}, 2)).toMatchObject({checks: 3600});
});
