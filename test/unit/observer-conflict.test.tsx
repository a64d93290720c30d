// @vitest-environment happy-dom
import {act, cleanup, renderHook, waitFor} from '@testing-library/react';
import type {ReactNode} from 'react';
import {afterEach, expect, test} from 'vitest';
import {SendOnceProvider, useIntent} from '../../src/bindings/react.js';
import {createClient, memoryStore, type IntentStore} from '../../src/index.js';
import {fakeApi} from './fake-api.js';

afterEach(cleanup);

test('a conflict stays until an intent replaces it: a "send as new" whose store write fails leaves the conflict and the user\'s text, not the earlier intent as if found after a reload (issue 22 review)', async () => {
	const shared = memoryStore();
	const control = {failing: false};
	const store: IntentStore = {
		get: async id => shared.get(id),
		async set(id, value) {
			if (control.failing) throw new DOMException('The transaction was aborted', 'AbortError');
			return shared.set(id, value);
		},
		delete: async id => shared.delete(id),
		list: async () => shared.list(),
	};
	const api = fakeApi('network');
	const client = createClient({store, fetch: api.fetch, retry: {limit: 1, budget: false}});
	await client.send('contact-form', {url: 'https://api.test/contact', json: {message: 'one'}});
	const wrapper = ({children}: {children: ReactNode}) => <SendOnceProvider client={client}>{children}</SendOnceProvider>;
	const {result} = renderHook(() => useIntent('contact-form'), {wrapper});
	await waitFor(() => expect(result.current.state).toBe('unresolved'));
	const two = {url: 'https://api.test/contact', json: {message: 'two'}};
	await act(async () => {
		await result.current.send(two);
	});
	expect(result.current.conflict?.request).toEqual(two);

	control.failing = true;
	await act(async () => {
		await result.current.send(two, {replace: true});
	});

	expect(result.current.error).toBeInstanceOf(Error);
	expect(result.current.conflict?.request).toEqual(two);
	expect(api.seen.map(seen => JSON.parse(seen.body) as unknown)).toEqual([{message: 'one'}]);
});
