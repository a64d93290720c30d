import {describe, expect, test} from 'vitest';
import type {IntentRecord} from '../../src/core/record.js';
import {reduce} from '../../src/core/state.js';

const record = (state: IntentRecord['state'], attempts = 1): IntentRecord => ({
	v: 1, key: 'k-1', scope: 'checkout', state, request: {url: 'https://api.test/orders', method: 'POST', headers: {}},
	fingerprint: 'f'.repeat(64), attempts, createdAt: 0, expiresAt: 1, updatedAt: 0,
});

describe('an outcome another sender reports (observe)', () => {
	test('overrides expired, this page\'s own verdict on its window, and never lowers the attempts', () => {
		expect(reduce(record('expired', 2), {type: 'observe', state: 'succeeded', attempts: 1, at: 5})).toMatchObject({state: 'succeeded', attempts: 2, updatedAt: 5});
	});

	test.each(['succeeded', 'failed'] as const)('never overrides the server\'s own answer (%s)', state => {
		expect(() => reduce(record(state), {type: 'observe', state: 'unresolved', attempts: 3, reason: 'exhausted', at: 5})).toThrow(`sendonce: a ${state} intent cannot change`);
	});
});
