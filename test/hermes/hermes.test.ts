import {join} from 'node:path';
import {afterAll, beforeAll, describe, expect, test} from 'vitest';
import {bundleApp, launchApp, versions, type Built, type Ran} from './harness.js';

// A React Native app (test/hermes/app) bundled by Metro with React Native's Babel preset and run
// by the Hermes VM, twice: the first launch orders tea, then a book whose reply is lost, and is
// killed while it waits to retry; the second launch starts over what AsyncStorage kept.
const UUID_V4 = /^[\da-f]{8}-[\da-f]{4}-4[\da-f]{3}-[89ab][\da-f]{3}-[\da-f]{12}$/;
const APP_SETTINGS = {'user-settings': '{"theme":"dark"}'};

let built: Built | undefined;
let first: Ran;
let second: Ran;

function steps(ran: Ran, step: string) {
	return ran.app.filter(entry => entry.step === step);
}

beforeAll(async () => {
	built = await bundleApp();
	first = await launchApp(built.bundle, {disk: {...APP_SETTINGS}, orders: ['tea', 'book'], loseReplyTo: ['book'], killAfterLostReply: true}, join(built.dir, 'launch-1'));
	second = await launchApp(built.bundle, {disk: first.disk, server: first.server, orders: []}, join(built.dir, 'launch-2'));
}, 180_000);

afterAll(async () => {
	await built?.cleanup();
});

describe(`a React Native app bundled by Metro ${versions.metro} (@react-native/babel-preset ${versions.babelPreset}), on Hermes ${versions.hermes}`, () => {
	test('Metro resolves sendonce and sendonce/react-native through the package\'s exports', () => {
		expect(built?.resolved).toEqual({
			sendonce: 'node_modules/sendonce/dist/index.js',
			'sendonce/react-native': 'node_modules/sendonce/dist/react-native.js',
		});
	});

	test('intent and send: one request with a v4 key from react-native-get-random-values, one effect', () => {
		expect(steps(first, 'error')).toEqual([]);
		const [tea] = steps(first, 'sent');
		expect(tea).toMatchObject({item: 'tea', status: 'succeeded', attempts: 1, replayed: false, data: {order: 'tea'}});
		expect(tea!.key).toMatch(UUID_V4);
		expect(first.server.requests[0]).toEqual({method: 'POST', url: 'https://api.example.com/orders', key: tea!.key, body: '{"item":"tea"}'});
	});

	test('a lost reply: the work was done once, and the app killed before its retry leaves the intent in AsyncStorage', () => {
		const [, book] = steps(first, 'intent');
		expect(first.event).toBe('killed');
		expect(first.server.effects).toEqual({tea: 1, book: 1});
		expect(first.server.requests.map(request => request.key)).toEqual([steps(first, 'sent')[0]!.key, book!.key]);
		// The settled tea is deleted; the book waits on disk, with the app's own key left alone.
		expect(Object.keys(first.disk).sort()).toEqual(['sendonce:intent:order:book', 'user-settings']);
		expect(JSON.parse(first.disk['sendonce:intent:order:book']!)).toMatchObject({
			key: book!.key,
			state: 'sending',
			attempts: 1,
			request: {url: 'https://api.example.com/orders', method: 'POST', body: '{"item":"book"}'},
		});
	});

	test('the next launch resumes it with the same key: replayed, still one effect, and AsyncStorage keeps only the app\'s key', () => {
		const [, book] = steps(first, 'intent');
		expect(steps(second, 'error')).toEqual([]);
		expect(steps(second, 'stored')).toEqual([{step: 'stored', intents: [{key: book!.key, state: 'sending', attempts: 1}]}]);
		expect(steps(second, 'resumed')).toEqual([{
			step: 'resumed',
			results: [{status: 'succeeded', key: book!.key, attempts: 2, replayed: true, data: {order: 'book', number: 2}}],
		}]);
		expect(second.event).toBe('idle');
		expect(second.server.requests.map(request => request.key)).toEqual([steps(first, 'sent')[0]!.key, book!.key, book!.key]);
		expect(second.server.effects).toEqual({tea: 1, book: 1});
		expect(second.disk).toEqual(APP_SETTINGS);
		expect(second.pendingTimers).toEqual([]);
	});

	test('every request goes to the URL as the app wrote it, not React Native URL\'s `…/orders/`', () => {
		expect(second.server.requests.map(request => request.url)).toEqual(Array.from({length: 3}, () => 'https://api.example.com/orders'));
	});
});
