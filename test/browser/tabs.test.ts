import type {Page} from 'playwright-core';
import {describe, expect, test} from 'vitest';
import {sessionEntries, useSite} from './harness.js';

const OPTIONS = {store: 'session', retry: {limit: 30, baseDelay: 100, maxDelay: 400}, timeout: 10_000} as const;

const site = useSite();

async function resume(page: Page) {
	return page.evaluate(async options => {
		const {createClient} = await window.loadSendonce();
		return createClient(options).resume();
	}, OPTIONS);
}

/**
 * A tab with a stored, unsent intent, and its duplicate: "Duplicate tab" starts the new tab
 * with a copy of the old one's sessionStorage.
 */
async function duplicatedTabs(): Promise<{key: string; first: Page; second: Page}> {
	const first = await site.context.newPage();
	await first.goto(`${site.server.url}/`);
	const key = await first.evaluate(async options => {
		const {createClient} = await window.loadSendonce();
		return (await createClient(options).intent('checkout', {url: '/orders', json: {order: 'o-1'}})).key;
	}, OPTIONS);

	const copied = await sessionEntries(first);
	expect(Object.keys(copied)).toEqual(['sendonce:intent:checkout']);
	const second = await site.context.newPage();
	await second.addInitScript(entries => {
		if (sessionStorage.length === 0) for (const [name, value] of Object.entries(entries)) sessionStorage.setItem(name, value);
	}, copied);
	await second.goto(`${site.server.url}/`);
	expect(await sessionEntries(second)).toEqual(copied);
	return {key, first, second};
}

describe('a duplicated tab', () => {
	test('both copies resume the same intent: one key, and the server works once', async () => {
		const {key, first, second} = await duplicatedTabs();
		// The work is slow enough for the two tabs' sends to overlap.
		site.server.faults.push({type: 'slow', ms: 500});
		const results = await Promise.all([resume(first), resume(second)]);

		// Whether the second tab's request got a 409 and then a replay, or the tab waited for the
		// first tab's outcome without sending, the work was done once, under one key.
		expect(results.flat()).toMatchObject([{status: 'succeeded', key}, {status: 'succeeded', key}]);
		expect(site.server.effects.get('o-1')).toBe(1);
		expect(site.server.totalEffects).toBe(1);
		expect(site.server.requests.length).toBeGreaterThanOrEqual(1);
		expect(new Set(site.server.keys)).toEqual(new Set([key]));
	});

	test('after both resumed, neither tab keeps the settled intent: a later resume sends nothing', async () => {
		const {first, second} = await duplicatedTabs();
		site.server.faults.push({type: 'slow', ms: 500});
		await Promise.all([resume(first), resume(second)]);
		const seen = site.server.requests.length;

		expect(await sessionEntries(first)).toEqual({});
		expect(await sessionEntries(second)).toEqual({});
		expect([...await resume(first), ...await resume(second)]).toEqual([]);
		expect(site.server.requests.length).toBe(seen);
	});
});
