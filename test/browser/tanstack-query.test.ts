import {fileURLToPath} from 'node:url';
import {build} from 'esbuild';
import type {Browser} from 'playwright-core';
import {afterAll, afterEach, beforeAll, expect, test} from 'vitest';
import {startContractServer, type ContractServer} from '../server/contract-server.js';
import {launchBrowser} from './harness.js';

/*
 * sendonce/tanstack-query in Chromium (issue 13): TanStack Query persists only paused mutations
 * and forgets one in flight when the page goes. A sendonce-backed one survives a reload: the page
 * resumes its intent with the same key, and shows it through `useMutationState`.
 */

const PAGE = '<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><div id="root"></div><script type="module" src="/app.js"></script>';

let server: ContractServer;
let browser: Browser;
beforeAll(async () => {
	const {outputFiles: [app]} = await build({
		entryPoints: [fileURLToPath(new URL('pages/tanstack-query.tsx', import.meta.url))],
		bundle: true,
		format: 'esm',
		platform: 'browser',
		target: 'es2022',
		jsx: 'automatic',
		define: {'process.env.NODE_ENV': '"production"'},
		write: false,
		logLevel: 'silent',
	});
	server = await startContractServer({
		serve(request, response) {
			if (request.method !== 'GET') return false;
			const script = request.url === '/app.js';
			response.writeHead(200, {'content-type': script ? 'text/javascript' : 'text/html', 'cache-control': 'no-store'});
			response.end(script ? app!.text : PAGE);
			return true;
		},
	});
	browser = await launchBrowser();
});
afterAll(async () => {
	await browser?.close();
	await server?.close();
});
afterEach(() => {
	server.reset();
});

test('a mutation in flight, the page reloads: the intent resumes with its key, one effect, shown by useMutationState', async () => {
	const context = await browser.newContext();
	try {
		const page = await context.newPage();
		await page.goto(`${server.url}/`);
		// The server does the work until the page has gone: no reply reaches the first page.
		let workEnds!: () => void;
		const reloaded = new Promise<void>(resolve => {
			workEnds = resolve;
		});
		server.faults.push({type: 'hold', until: reloaded});
		await page.click('button');
		await expect.poll(() => server.inFlight).toBe(1);
		expect(await page.textContent('#status')).toBe('pending');
		const [key] = server.keys;

		await page.reload();
		// TanStack Query forgot the mutation; sendonce did not.
		expect(await page.textContent('#status')).toBe('idle');
		workEnds();
		const resumed = page.locator(`li[data-key="${key}"]`);
		await expect.poll(async () => resumed.getAttribute('data-status'), {timeout: 10_000}).not.toBe('pending');
		expect(await resumed.getAttribute('data-status'), await resumed.getAttribute('title') ?? '').toBe('success');

		expect(await resumed.textContent()).toBe('checkout:tq-reload');
		expect(server.effects.get('tq-reload')).toBe(1);
		expect(server.keys.length).toBeGreaterThan(1);
		expect(new Set(server.keys)).toEqual(new Set([key]));
	} finally {
		await context.close();
	}
});
