import {describe, expect, test} from 'vitest';
import type {IntentRecord} from '../../src/core/record.js';
import {canMove, isSettled, mayHaveBeenSent, reduce} from '../../src/core/state.js';

const record = (state: IntentRecord['state'], attempts = 1): IntentRecord => ({
	v: 1, key: 'k-1', scope: 'checkout', state, request: {url: 'https://api.test/orders', method: 'POST', headers: {}},
	fingerprint: 'f'.repeat(64), attempts, createdAt: 0, expiresAt: 1, updatedAt: 0,
});

describe('an outcome another sender reports (observe)', () => {
	test('overrides expired, this page\'s own verdict on its window, and never lowers the attempts', () => {
		expect(reduce(record('expired', 2), {type: 'observe', state: 'succeeded', attempts: 1, at: 5})).toMatchObject({state: 'succeeded', attempts: 2, updatedAt: 5});
	});

	test.each(['succeeded', 'failed'] as const)('never overrides the server\'s own answer (%s)', state => {
		expect(() => reduce(record(state), {type: 'observe', state: 'unresolved', attempts: 3, cause: {reason: 'exhausted'}, at: 5})).toThrow(`sendonce: a ${state} intent cannot change`);
	});
});

describe('what a check found (issue 33)', () => {
	test.each(['unresolved', 'expired'] as const)('settles an intent whose outcome was unknown (%s): succeeded, failed or not-sent', from => {
		for (const to of ['succeeded', 'failed', 'not-sent'] as const) {
			expect(canMove(from, to)).toBe(true);
			expect(reduce(record(from, 2), {type: 'settle', state: to, at: 5})).toMatchObject({state: to, attempts: 2, updatedAt: 5});
		}
	});

	test('not-sent is settled, never sent again, never "may have been sent", and nothing moves it', () => {
		expect(isSettled('not-sent')).toBe(true);
		expect(mayHaveBeenSent('not-sent', 3)).toBe(false);
		for (const to of ['pending', 'sending', 'succeeded', 'failed', 'unresolved', 'expired'] as const) expect(canMove('not-sent', to)).toBe(false);
		expect(() => reduce(record('not-sent'), {type: 'observe', state: 'succeeded', attempts: 2, at: 5})).toThrow('sendonce: a not-sent intent cannot change');
	});

	test('an intent never sent, or one waiting for the network, is not settled by a check: pending moves to no outcome', () => {
		for (const to of ['succeeded', 'failed', 'not-sent'] as const) expect(canMove('pending', to)).toBe(false);
	});
});

describe('why an intent is unresolved', () => {
	test('is kept with the record when it becomes unresolved: the reason, the last status and the last error\'s name', () => {
		const next = reduce(record('sending', 3), {type: 'unresolve', cause: {reason: 'exhausted', lastStatus: 503}, at: 5});
		expect(next).toEqual({...record('unresolved', 3), updatedAt: 5, reason: 'exhausted', lastStatus: 503});
	});

	test('is dropped by the next attempt, and replaced by the next cause', () => {
		const unresolved = reduce(record('sending', 3), {type: 'unresolve', cause: {reason: 'exhausted', lastError: 'TimeoutError'}, at: 5});
		const sending = reduce(unresolved, {type: 'attempt', at: 6});
		expect(sending).not.toHaveProperty('reason');
		expect(sending).not.toHaveProperty('lastError');
		expect(reduce(sending, {type: 'unresolve', cause: {reason: 'refused', lastStatus: 401}, at: 7})).toMatchObject({reason: 'refused', lastStatus: 401});
		expect(reduce(sending, {type: 'unresolve', cause: {reason: 'refused', lastStatus: 401}, at: 7})).not.toHaveProperty('lastError');
	});

	test('comes with an outcome another sender reports', () => {
		const observed = reduce(record('sending', 1), {type: 'observe', state: 'unresolved', attempts: 2, cause: {reason: 'exhausted', lastError: 'TypeError'}, at: 5});
		expect(observed).toMatchObject({state: 'unresolved', attempts: 2, reason: 'exhausted', lastError: 'TypeError'});
	});
});
