import {IDBFactory} from 'fake-indexeddb';
import {afterEach, beforeEach, expect, test, vi} from 'vitest';
import {indexedDbStore} from '../../src/index.js';

beforeEach(() => {
	vi.stubGlobal('indexedDB', new IDBFactory());
});
afterEach(() => {
	vi.unstubAllGlobals();
});

/** What another tab's request ends with: success, or `blocked` while a connection stays open. */
async function settle(request: IDBOpenDBRequest): Promise<'success' | 'blocked' | 'error'> {
	return new Promise(resolve => {
		request.onsuccess = () => {
			if (request.result instanceof Object && 'close' in request.result) (request.result as IDBDatabase).close();
			resolve('success');
		};
		request.onblocked = () => resolve('blocked');
		request.onerror = () => resolve('error');
	});
}

test('an idle connection closes for another tab\'s upgrade, and the store opens the database again on its next use', async () => {
	const store = indexedDbStore();
	await store.set('intent:a', {key: 'k-a'});

	expect(await settle(indexedDB.open('sendonce', 2))).toBe('success');

	expect(await store.get('intent:a')).toEqual({key: 'k-a'});
	await store.set('intent:b', {key: 'k-b'});
	expect((await store.list()).map(([id]) => id).sort()).toEqual(['intent:a', 'intent:b']);
});

test('an idle connection closes for another tab\'s deleteDatabase (a sign-out), and the next write creates the database again', async () => {
	const store = indexedDbStore();
	await store.set('intent:a', {key: 'k-a'});

	expect(await settle(indexedDB.deleteDatabase('sendonce') as IDBOpenDBRequest)).toBe('success');

	expect(await store.list()).toEqual([]);
	await store.set('intent:b', {key: 'k-b'});
	expect(await store.get('intent:b')).toEqual({key: 'k-b'});
});
