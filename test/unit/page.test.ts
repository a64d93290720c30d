import {expect, test} from 'vitest';
import {idle} from '../../src/core/page.js';
import type {IntentRecord} from '../../src/core/record.js';
import {mayHaveBeenSent} from '../../src/core/state.js';
import type {IntentState} from '../../src/core/types.js';

const STATES: IntentState[] = ['pending', 'sending', 'unresolved', 'succeeded', 'failed', 'expired'];

const record = (state: IntentState, attempts: number): IntentRecord => ({
	v: 1,
	key: 'k',
	scope: 'contact',
	state,
	request: {url: 'https://api.test/contact', method: 'POST', headers: {}},
	fingerprint: 'a'.repeat(64),
	attempts,
	createdAt: 0,
	expiresAt: 60_000,
	updatedAt: 0,
});

// Every state × attempts × letting go: the rule of a page that no longer sends its intent.
for (const state of STATES) {
	for (const attempts of [0, 1, 3]) {
		for (const lettingGo of [false, true]) {
			test(`a page that stops sending a ${state} intent (${attempts} attempts${lettingGo ? ', let go' : ''}) never shows it being sent`, () => {
				const next = idle(record(state, attempts), lettingGo, 5);
				expect(next.state).not.toBe('sending');
				// Waiting for the network after an attempt, or let go: nothing sends it from here.
				if (next.state === 'pending') expect(attempts === 0 && !lettingGo).toBe(true);
				// Attempts never change, and only a busy copy moves.
				expect(next.attempts).toBe(attempts);
				if (state !== 'sending' && state !== 'pending') expect(next).toEqual(record(state, attempts));
				// What the user is told follows: may have been sent once an attempt started.
				if (next.state === 'unresolved' && state !== 'unresolved') {
					expect(next.reason).toBe('aborted');
					expect(mayHaveBeenSent(next.state, next.attempts, next.reason)).toBe(attempts > 0);
				}
			});
		}
	}
}
