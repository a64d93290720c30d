import {describe, expect, test} from 'vitest';
import {indexedDbEntries, openPage, useSite} from './harness.js';

/*
 * The delete of a settled record is off the way of the result (issue 12): a page that dies
 * after the answer and before the delete leaves a `sending` record behind, which the next load
 * sends again with the same key, and the server replays its answer.
 */

const OPTIONS = {retry: {limit: 3, baseDelay: 20, maxDelay: 50}, timeout: 10_000} as const;
const ORDER = {url: '/orders', json: {order: 'o-1'}} as const;

/** The page dies between the answer and the delete: no record is ever deleted on this load. */
const neverDelete = () => {
	if (sessionStorage.getItem('test:no-delete') === 'yes') IDBObjectStore.prototype.delete = () => ({}) as IDBRequest;
};

const site = useSite();

describe('a crash after the answer, before the delete', () => {
	test('leaves a sending record; the next load resends it with the same key and the server replays, one effect', async () => {
		const page = await openPage(site.context, site.server, neverDelete);
		await page.evaluate(() => sessionStorage.setItem('test:no-delete', 'yes'));
		await page.reload();
		const first = await page.evaluate(async ({options, order}) => {
			const {createClient} = await window.loadSendonce();
			return createClient(options).send('checkout', order);
		}, {options: OPTIONS, order: ORDER});

		expect(first).toMatchObject({status: 'succeeded', replayed: false, attempts: 1});
		expect(await indexedDbEntries(page)).toMatchObject({'intent:checkout': {key: first.key, state: 'sending', attempts: 1}});

		await page.evaluate(() => sessionStorage.removeItem('test:no-delete'));
		await page.reload();
		const resumed = await page.evaluate(async options => {
			const {createClient} = await window.loadSendonce();
			return createClient(options).resume();
		}, OPTIONS);

		expect(resumed).toMatchObject([{status: 'succeeded', key: first.key, replayed: true, attempts: 2}]);
		expect(site.server.effects.get('o-1')).toBe(1);
		expect(site.server.keys).toEqual([first.key, first.key]);
		await expect.poll(async () => indexedDbEntries(page)).toEqual({});
	});
});
