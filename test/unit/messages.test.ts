import {describe, expect, test} from 'vitest';
import type {IntentResult} from '../../src/index.js';
import {messages} from '../../src/core/messages.js';

const unresolved = (fields: Partial<Extract<IntentResult, {status: 'unresolved'}>>): IntentResult => ({
	status: 'unresolved', key: 'k', reason: 'exhausted', error: undefined, attempts: 3, mayHaveBeenSent: true, ...fields,
});
const timeout = Object.assign(new Error('The attempt timed out after 15000 ms'), {name: 'TimeoutError'});

describe('messages.because() says what happened, not always "the connection failed"', () => {
	test.each<[string, IntentResult | undefined, RegExp]>([
		['the connection failed', unresolved({error: new TypeError('Failed to fetch')}), /connection failed/],
		['the server did not answer in time', unresolved({error: timeout}), /did not answer in time/],
		['the server kept answering 503', unresolved({response: {status: 503, headers: {}}}), /kept answering with errors \(503\)/],
		['the server was still working (409)', unresolved({response: {status: 409, headers: {}}}), /still working on it/],
		['a refusal after a possible send (401)', unresolved({reason: 'refused', response: {status: 401, headers: {}}}), /could not confirm.*\(401\).*Sign in again/],
		['a redirect to a login page', unresolved({reason: 'redirected', response: {status: 200, headers: {}, redirected: true}}), /sign-in page/],
		['an unreadable answer', unresolved({reason: 'transport'}), /could not be read/],
		['a replayed 500', unresolved({reason: 'replayed-error', response: {status: 500, headers: {}}}), /kept answering with errors \(500\)/],
		['the retry budget, after 503s', unresolved({reason: 'budget', response: {status: 503, headers: {}}}), /kept answering with errors \(503\)/],
		['an abort', unresolved({reason: 'aborted'}), /Sending was stopped/],
		['an intent found after a reload', undefined, /interrupted/],
	])('%s', (_case, result, expected) => {
		expect(messages.because(result)).toMatch(expected);
	});

	test('the headline no longer claims a cause', () => {
		expect(messages.mayHaveBeenSent).toBe('Your message may have been sent.');
	});
});
