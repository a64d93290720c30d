/**
 * End to end: the contact-form example (examples/react-form), built with Vite, served by the
 * demo server (`npm run demo`'s, started in-process on a free port) and driven in Chromium
 * through its form and its chaos panel. What counts is what the server did: emails delivered
 * (its effects) and the keys it saw. Chromium may itself resend a request whose connection
 * dropped (same key), so raw request counts are only asserted where no connection drops.
 */
import {mkdtemp, rm} from 'node:fs/promises';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {fileURLToPath} from 'node:url';
import type {Browser, BrowserContext, Page} from 'playwright-core';
import {build} from 'vite';
import {afterAll, afterEach, beforeAll, beforeEach, describe, expect, test} from 'vitest';
import {refusal, SLOW_MS, startDemoServer, type DemoServer, type DemoStats, type LoggedRequest} from '../../examples/server/demo-server.js';
import {messages} from '../../src/react.js';
import {launchBrowser} from './harness.js';

const CONFIG = fileURLToPath(new URL('../../examples/react-form/vite.config.ts', import.meta.url));
const UUID = /^[\da-f]{8}-[\da-f]{4}-4[\da-f]{3}-[89ab][\da-f]{3}-[\da-f]{12}$/;

/**
 * `?fast`: 0–400 ms between attempts instead of 0–4 s, five attempts per press (see the
 * example's README). The per-attempt timeout stays 3 s, shorter than "Make the work slow".
 */
const FAST = '?fast';

interface Draft {
	name: string;
	email: string;
	message: string;
}

const DRAFT: Draft = {name: 'Ada Lovelace', email: 'ada@example.com', message: 'Could you send me the notes on the Analytical Engine?'};
/** The bytes every attempt must carry: sendonce serialises `json` once, keys sorted. */
const BODY = JSON.stringify({email: DRAFT.email, message: DRAFT.message, name: DRAFT.name});

let dist: string;
let browser: Browser;
let demo: DemoServer;
let context: BrowserContext;
let pageErrors: Error[];

/**
 * The example as `npm run demo` builds it, into a directory of its own (no source maps: faster).
 * Vitest sets NODE_ENV=test, and Vite would then bundle React's development build: the demo
 * runs the production one.
 */
async function buildExample(outDir: string): Promise<void> {
	const nodeEnv = process.env.NODE_ENV;
	process.env.NODE_ENV = 'production';
	try {
		await build({configFile: CONFIG, logLevel: 'warn', build: {outDir, emptyOutDir: true, sourcemap: false}});
	} finally {
		process.env.NODE_ENV = nodeEnv;
	}
}

beforeAll(async () => {
	dist = await mkdtemp(join(tmpdir(), 'sendonce-demo-'));
	[, browser] = await Promise.all([buildExample(dist), launchBrowser()]);
}, 60_000);
afterAll(async () => {
	await browser?.close();
	if (dist) await rm(dist, {recursive: true, force: true});
});
beforeEach(async () => {
	// A fresh server (no key, count or slow work left over) and a fresh profile per test.
	[demo, context] = await Promise.all([startDemoServer({port: 0, root: dist}), browser.newContext()]);
	pageErrors = [];
});
afterEach(async () => {
	await context?.close();
	await demo?.close();
	expect(pageErrors).toEqual([]);
});

async function openDemo(query: string): Promise<Page> {
	const page = await context.newPage();
	page.on('pageerror', error => pageErrors.push(error));
	await page.goto(`${demo.url}/${query}`);
	// The chaos panel has its first counts from the server: the app is up.
	await expect.poll(async () => page.getByTestId('delivered-count').textContent(), {timeout: 5000}).toBe('0');
	return page;
}

async function fill(page: Page, draft: Draft): Promise<void> {
	await page.getByLabel('Name', {exact: true}).fill(draft.name);
	await page.getByLabel('Email', {exact: true}).fill(draft.email);
	await page.getByLabel('Message', {exact: true}).fill(draft.message);
}

async function fields(page: Page): Promise<Draft> {
	return {
		name: await page.getByLabel('Name', {exact: true}).inputValue(),
		email: await page.getByLabel('Email', {exact: true}).inputValue(),
		message: await page.getByLabel('Message', {exact: true}).inputValue(),
	};
}

async function stats(): Promise<DemoStats> {
	const response = await fetch(`${demo.url}/demo/stats`);
	return response.json() as Promise<DemoStats>;
}

/** What the page's outcome region says: its state and the key it shows. */
async function outcome(page: Page): Promise<{state: string | null; key: string | null}> {
	const region = page.getByTestId('outcome');
	return {state: await region.getAttribute('data-state'), key: await region.getAttribute('data-key')};
}

async function stateOf(page: Page): Promise<string | null> {
	return page.getByTestId('outcome').getAttribute('data-state');
}

/** Waits until the outcome region reads `state`, then returns the key it shows. */
async function reaches(page: Page, state: string, timeout = 10_000): Promise<string> {
	await expect.poll(async () => stateOf(page), {timeout}).toBe(state);
	const {key} = await outcome(page);
	expect(key).toMatch(UUID);
	return key!;
}

/** The distinct keys the server saw, in order of first appearance. */
const distinctKeys = () => [...new Set(demo.api.keys)];

/** Turns the "Server down" switch in the panel, and waits until the server confirms it. */
async function serverDown(page: Page, down: boolean): Promise<void> {
	const toggle = page.getByTestId('chaos-down');
	await (down ? toggle.check() : toggle.uncheck());
	await expect.poll(async () => (await stats()).down).toBe(down);
}

/**
 * A press of Send whose email is delivered and whose reply is lost, with the server down for
 * every retry: the page ends unresolved. Resolves to the page and the intent's key.
 */
async function deliveredThenDown(): Promise<{page: Page; key: string}> {
	const page = await openDemo(FAST);
	await fill(page, DRAFT);
	await page.getByTestId('chaos-lose-reply').click();
	await expect.poll(async () => (await stats()).queued).toEqual([{type: 'lose-reply'}]);
	await serverDown(page, true);
	await page.getByTestId('send').click();
	return {page, key: await reaches(page, 'unresolved')};
}

/** The panel's log as the page shows it: each request's key and what came back to the page. */
async function pageLog(page: Page): Promise<Array<{key: string; outcome: string; text: string}>> {
	return page.getByTestId('request-log').locator('li').evaluateAll(items => items.map(item => ({
		key: (item as HTMLElement).dataset.key ?? '',
		outcome: (item as HTMLElement).dataset.outcome ?? '',
		text: item.textContent ?? '',
	})));
}

/** The outcomes in the page's log. */
async function pageOutcomes(page: Page): Promise<string[]> {
	return (await pageLog(page)).map(({outcome}) => outcome);
}

describe('the contact-form demo in Chromium', () => {
	test('a lost reply: the page ends "sent" with the replay note, and the server delivered one email', async () => {
		const page = await openDemo(FAST);
		await fill(page, DRAFT);
		await page.getByTestId('chaos-lose-reply').click();
		await expect.poll(async () => (await stats()).queued).toEqual([{type: 'lose-reply'}]);

		await page.getByTestId('send').click();
		const key = await reaches(page, 'succeeded');
		await page.getByText(messages.sent).waitFor();
		expect(await page.getByTestId('replayed').textContent()).toBe(messages.replayed);
		await expect.poll(async () => page.getByTestId('delivered-count').textContent()).toBe('1');

		expect(demo.api.totalEffects).toBe(1);
		expect(distinctKeys()).toEqual([key]);
		// The first request did the work and lost its reply; a later one (sendonce's retry, or
		// Chromium resending the dropped request) got the stored answer replayed.
		expect(demo.api.requests[0]!.outcome).toBe('dropped');
		expect(demo.api.requests.at(-1)!.outcome).toBe(201);
		expect(new Set(demo.api.requests.map(request => request.body))).toEqual(new Set([BODY]));
		expect(await page.getByTestId('send').count()).toBe(0);
		// The panel's log shows the same: the dropped request stays dropped, the last is the replay.
		await expect.poll(async () => (await pageLog(page)).length).toBe(demo.api.requests.length);
		const log = await pageLog(page);
		expect(log[0]).toMatchObject({key, outcome: 'dropped'});
		expect(log.at(-1)).toMatchObject({key, outcome: '201', text: expect.stringContaining('replayed')});
	});

	test('a reload while the work is slow: the page comes back sending, then sent, with the same key; one email', async () => {
		// Forty attempts 0–400 ms apart: the retries after the reload are answered 409 until the
		// 4 s of slow work end, and must not run out before (with five, they would: ~100%).
		const page = await openDemo(`${FAST}&attempts=40`);
		await fill(page, DRAFT);
		await page.getByTestId('chaos-slow').click();
		await expect.poll(async () => (await stats()).queued).toEqual([{type: 'slow', ms: SLOW_MS}]);

		await page.getByTestId('send').click();
		// The server has the request and is working on it.
		await expect.poll(() => ({requests: demo.api.requests.length, inFlight: demo.api.inFlight})).toEqual({requests: 1, inFlight: 1});
		const before = await outcome(page);
		expect(before.state).toBe('sending');
		expect(before.key).toMatch(UUID);

		await page.reload();
		await expect.poll(async () => outcome(page), {timeout: 5000}).toEqual({state: 'sending', key: before.key});
		expect(await fields(page)).toEqual(DRAFT);
		expect(await page.getByTestId('send').isDisabled()).toBe(true);
		expect(demo.api.totalEffects).toBe(0);

		expect(await reaches(page, 'succeeded', 15_000)).toBe(before.key);
		expect(await page.getByTestId('replayed').textContent()).toBe(messages.replayed);
		await expect.poll(async () => page.getByTestId('delivered-count').textContent()).toBe('1');

		expect(demo.api.totalEffects).toBe(1);
		expect(distinctKeys()).toEqual([before.key]);
		// After the reload: 409 while the first request's work ran, then its stored answer.
		const after = demo.api.requests.slice(1).map(request => request.outcome);
		expect(after.length).toBeGreaterThanOrEqual(1);
		expect(after.at(-1)).toBe(201);
		expect(after.slice(0, -1).every(status => status === 409)).toBe(true);
		expect(new Set(demo.api.requests.map(request => request.body))).toEqual(new Set([BODY]));
	});

	describe('pressing Send twice', () => {
		test('a double click sends one request and delivers one email', async () => {
			const page = await openDemo(FAST);
			await fill(page, DRAFT);
			await page.getByTestId('send').dblclick();
			const key = await reaches(page, 'succeeded');

			expect(demo.api.requests.map(({key, outcome}) => ({key, outcome}))).toEqual([{key, outcome: 201}]);
			expect(demo.api.totalEffects).toBe(1);
			await expect.poll(async () => page.getByTestId('delivered-count').textContent()).toBe('1');
		});

		test('two presses in one task, before React disables the button: still one request', async () => {
			const page = await openDemo(FAST);
			await fill(page, DRAFT);
			await page.getByTestId('send').evaluate((button: HTMLButtonElement) => {
				button.click();
				button.click();
			});
			const key = await reaches(page, 'succeeded');

			expect(demo.api.requests.map(({key, outcome}) => ({key, outcome}))).toEqual([{key, outcome: 201}]);
			expect(demo.api.totalEffects).toBe(1);
		});
	});

	describe('retries run out', () => {
		test('server down from the start: "may have been sent", nothing delivered; back up, Retry sends the same key once', async () => {
			const page = await openDemo(FAST);
			await fill(page, DRAFT);
			await serverDown(page, true);

			await page.getByTestId('send').click();
			const key = await reaches(page, 'unresolved');
			expect(await page.getByRole('alert').getByText(messages.mayHaveBeenSent).count()).toBe(1);
			expect(await page.getByTestId('send').count()).toBe(0);
			// Five attempts, each turned away with a 503 before any work.
			expect(demo.api.requests.map(request => request.outcome)).toEqual([503, 503, 503, 503, 503]);
			expect(demo.api.totalEffects).toBe(0);
			expect(await fields(page)).toEqual(DRAFT);

			await serverDown(page, false);
			await page.getByTestId('retry').click();
			expect(await reaches(page, 'succeeded')).toBe(key);
			expect(await page.getByTestId('replayed').count()).toBe(0);
			expect(demo.api.totalEffects).toBe(1);
			expect(distinctKeys()).toEqual([key]);
			expect(demo.api.requests.at(-1)!.outcome).toBe(201);
			expect(new Set(demo.api.requests.map(request => request.body))).toEqual(new Set([BODY]));
		});

		test('reply lost, then server down: one email delivered; back up, Retry gets the stored answer, still one', async () => {
			const {page, key} = await deliveredThenDown();
			expect(await page.getByRole('alert').getByText(messages.mayHaveBeenSent).count()).toBe(1);
			await expect.poll(async () => page.getByTestId('delivered-count').textContent()).toBe('1');
			expect(demo.api.totalEffects).toBe(1);

			await serverDown(page, false);
			await page.getByTestId('retry').click();
			expect(await reaches(page, 'succeeded')).toBe(key);
			expect(await page.getByTestId('replayed').textContent()).toBe(messages.replayed);
			expect(demo.api.totalEffects).toBe(1);
			expect(distinctKeys()).toEqual([key]);
		});

		test('"Send as a new message" after an unresolved send: a new key, and exactly one more email', async () => {
			const {page, key: first} = await deliveredThenDown();
			expect(demo.api.totalEffects).toBe(1);
			await serverDown(page, false);
			// Nothing is sent again until the user chooses.
			expect(distinctKeys()).toEqual([first]);

			await page.getByTestId('send-as-new').click();
			const second = await reaches(page, 'succeeded');
			expect(second).not.toBe(first);
			expect(await page.getByTestId('replayed').count()).toBe(0);
			expect(demo.api.totalEffects).toBe(2);
			expect(distinctKeys()).toEqual([first, second]);
			expect(demo.api.requests.filter(request => request.key === second).map(request => request.outcome)).toEqual([201]);
			await expect.poll(async () => page.getByTestId('delivered-count').textContent()).toBe('2');
		});
	});

	test('a message the server refuses (400): its reason is shown, the form stays filled, and a corrected one is sent', async () => {
		const page = await openDemo(FAST);
		// The field is type="email", but the form is noValidate: the server is the judge.
		const bad = {...DRAFT, email: 'ada.example.com'};
		const reason = refusal(bad);
		expect(reason).toBe('that email address does not look right');
		await fill(page, bad);

		await page.getByTestId('send').click();
		const refused = await reaches(page, 'failed');
		expect(await page.getByTestId('refused').textContent()).toBe(messages.refused(reason));
		expect(await fields(page)).toEqual(bad);
		expect(await page.getByTestId('send').isEnabled()).toBe(true);
		expect(demo.api.requests.map(({key, outcome}) => ({key, outcome}))).toEqual([{key: refused, outcome: 400}]);
		expect(demo.api.totalEffects).toBe(0);

		// The refusal retired the key: the corrected message is a new intent.
		await page.getByLabel('Email', {exact: true}).fill(DRAFT.email);
		await page.getByTestId('send').click();
		const sent = await reaches(page, 'succeeded');
		expect(sent).not.toBe(refused);
		expect(demo.api.totalEffects).toBe(1);
		expect(demo.api.requests.at(-1)).toMatchObject({key: sent, outcome: 201, body: BODY});
	});
});

describe('the server\'s request log', () => {
	test('slow work, one attempt: the request is "waiting", then given up; the 201 the server wrote later reached no one, and the log says so', async () => {
		const page = await openDemo(`${FAST}&attempts=1`);
		await fill(page, DRAFT);
		await page.getByTestId('chaos-slow').click();
		await expect.poll(async () => (await stats()).queued).toEqual([{type: 'slow', ms: SLOW_MS}]);
		await page.getByTestId('send').click();
		// While the server works, the page waits, and the log says so.
		await expect.poll(async () => pageOutcomes(page)).toEqual(['waiting']);

		const key = await reaches(page, 'unresolved');
		await expect.poll(async () => pageOutcomes(page)).toEqual(['gave-up']);

		// The work ends after the page gave up: the server wrote its 201 to a closed connection.
		await expect.poll(() => demo.api.totalEffects, {timeout: SLOW_MS + 2000}).toBe(1);
		await expect.poll(async () => page.getByTestId('delivered-count').textContent()).toBe('1');
		expect(demo.api.requests.map(request => request.outcome)).toEqual([201]);
		expect(await pageLog(page)).toEqual([{key, outcome: 'gave-up', text: expect.stringContaining('no answer: the page stopped waiting')}]);
		expect((await stats()).recent).toEqual([{key, outcome: 'gave-up', replayed: false}]);

		// Retry asks again with the same key and gets the stored 201: still one email.
		await page.getByTestId('retry').click();
		expect(await reaches(page, 'succeeded')).toBe(key);
		expect(await page.getByTestId('replayed').textContent()).toBe(messages.replayed);
		expect(demo.api.totalEffects).toBe(1);
		await expect.poll(async () => pageOutcomes(page)).toEqual(['gave-up', '201']);
	});

	test('a 502 after the work stays 502; the retry\'s stored answer is marked as replayed', async () => {
		const page = await openDemo(FAST);
		await fill(page, DRAFT);
		// Not in the panel: a proxy that answers 502 once the work is done.
		demo.api.faults.push({type: 'error-after'});
		await page.getByTestId('send').click();
		const key = await reaches(page, 'succeeded');
		expect(await page.getByTestId('replayed').textContent()).toBe(messages.replayed);
		expect(demo.api.totalEffects).toBe(1);

		const expected: LoggedRequest[] = [{key, outcome: 502, replayed: false}, {key, outcome: 201, replayed: true}];
		expect((await stats()).recent).toEqual(expected);
		await expect.poll(async () => pageLog(page)).toEqual([
			{key, outcome: '502', text: expect.stringMatching(/→ 502$/)},
			{key, outcome: '201', text: expect.stringMatching(/→ 201, the stored answer replayed$/)},
		]);
	});
});
