/**
 * End to end: the contact-form examples (examples/react-form, and examples/vue-form for what a
 * user reads), built with Vite, served by the demo server (`npm run demo`'s, started in-process
 * on a free port) and driven in Chromium through the form and the chaos panel. What counts is
 * what the server did: emails delivered (its effects) and the keys it saw; and what the page
 * says about it. Chromium may itself resend a request whose kept-alive connection dropped (same
 * key), so raw request counts are only asserted where no connection drops.
 */
import {mkdtemp, rm} from 'node:fs/promises';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {fileURLToPath} from 'node:url';
import type {Browser, BrowserContext, Page} from 'playwright-core';
import {build} from 'vite';
import {afterAll, afterEach, beforeAll, beforeEach, describe, expect, inject, test} from 'vitest';
import {CHAOS, refusal, SLOW_MS, startDemoServer, type DemoServer, type DemoStats, type LoggedRequest} from '../../examples/server/demo-server.js';
import {startFullDemo, type FullDemoServer} from '../../examples/server/full-demo.js';
import {freshDatabase} from '../outbox/database.js';
import {RESETS} from '../../examples/shared/demo.js';
import {messages} from '../../src/bindings/react.js';
import {fireSync, launchBrowser} from './harness.js';

type Example = 'react' | 'vue';
const EXAMPLES: Example[] = ['react', 'vue'];
const config = (example: Example) => fileURLToPath(new URL(`../../examples/${example}-form/vite.config.ts`, import.meta.url));
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
const EDITED: Draft = {...DRAFT, message: 'Could you send me the notes, and the diagrams too?'};
const EDITED_BODY = JSON.stringify({email: EDITED.email, message: EDITED.message, name: EDITED.name});

/** The temporary directory the examples are built into, one folder each. */
let root: string;
let dists: Record<Example, string>;
let browser: Browser;
let demo: DemoServer;
/** Whether this test started `demo` (`openDemo` does, on its first page). */
let started: boolean;
let context: BrowserContext;
let pageErrors: Error[];
/** Everything the server refused to serve the pages (a missing favicon, say); the API aside. */
let notFound: string[];

/**
 * An example as `npm run demo` builds it, into a directory of its own (no source maps: faster).
 * Vitest sets NODE_ENV=test, and Vite would then bundle React's development build: the demo
 * runs the production one. The two builds run one after the other, as NODE_ENV is global.
 */
async function buildExamples(): Promise<Record<Example, string>> {
	const nodeEnv = process.env.NODE_ENV;
	process.env.NODE_ENV = 'production';
	try {
		const built = {} as Record<Example, string>;
		for (const example of EXAMPLES) {
			built[example] = join(root, example);
			await build({configFile: config(example), logLevel: 'warn', build: {outDir: built[example], emptyOutDir: true, sourcemap: false}});
		}

		return built;
	} finally {
		process.env.NODE_ENV = nodeEnv;
	}
}

beforeAll(async () => {
	root = await mkdtemp(join(tmpdir(), 'sendonce-demo-'));
	[dists, browser] = await Promise.all([buildExamples(), launchBrowser()]);
}, 90_000);
afterAll(async () => {
	await browser?.close();
	if (root) await rm(root, {recursive: true, force: true});
});
beforeEach(async () => {
	// A fresh profile per test, and a fresh server (no key, count or slow work left over) per page.
	context = await browser.newContext();
	started = false;
	pageErrors = [];
	notFound = [];
});
afterEach(async () => {
	await context?.close();
	if (started) await demo.close();
	expect(pageErrors).toEqual([]);
	expect(notFound).toEqual([]);
});

async function openDemo(query: string, example: Example = 'react'): Promise<Page> {
	if (!started) {
		demo = await startDemoServer({port: 0, root: dists[example]});
		started = true;
	}

	const page = await context.newPage();
	page.on('pageerror', error => pageErrors.push(error));
	page.on('response', response => {
		if (response.status() === 404) notFound.push(response.url());
	});
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
async function deliveredThenDown(example: Example = 'react'): Promise<{page: Page; key: string}> {
	const page = await openDemo(FAST, example);
	await fill(page, DRAFT);
	await page.getByTestId('chaos-lose-reply').click();
	await expect.poll(async () => (await stats()).queued).toEqual([{type: 'lose-reply'}]);
	await serverDown(page, true);
	await page.getByTestId('send').click();
	return {page, key: await reaches(page, 'unresolved')};
}

/** What the unresolved note says: its headline, and what happened. */
async function unsure(page: Page): Promise<{headline: string | null; because: string | null}> {
	return {
		headline: await page.getByRole('alert').locator('strong').textContent(),
		because: await page.getByTestId('because').textContent(),
	};
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

/** The sentence under the count of emails: "1 request received", "5 requests received". */
async function requestsReceived(page: Page): Promise<string> {
	const text = await page.getByTestId('requests-count').locator('xpath=..').textContent();
	return /^\S+ \S+ received/.exec(text ?? '')?.[0] ?? String(text);
}

const LABELS = ['Name', 'Email', 'Message'] as const;

/** Whether each field can be typed into. */
async function editable(page: Page): Promise<boolean[]> {
	return Promise.all(LABELS.map(async label => page.getByLabel(label, {exact: true}).isEditable()));
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

	test('a lost request: nothing reached the server, the retry delivers the email once, under the same key', async () => {
		const page = await openDemo(FAST);
		await fill(page, DRAFT);
		await page.getByTestId('chaos-lose-request').click();
		await expect.poll(async () => (await stats()).queued).toEqual([{type: 'drop-before'}]);

		await page.getByTestId('send').click();
		const key = await reaches(page, 'succeeded');
		await page.getByText(messages.sent).waitFor();
		await expect.poll(async () => page.getByTestId('delivered-count').textContent()).toBe('1');
		expect(demo.api.totalEffects).toBe(1);
		expect(distinctKeys()).toEqual([key]);
		// The first request was dropped before any work; the retry was the first the server worked on: not a replay.
		expect(demo.api.requests[0]!.outcome).toBe('dropped');
		expect(demo.api.requests.at(-1)!.outcome).toBe(201);
		expect(await page.getByTestId('replayed').count()).toBe(0);
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
			expect(await requestsReceived(page)).toBe('1 request received');
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
			await expect.poll(async () => requestsReceived(page)).toBe('5 requests received');

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

describe('"Deliver even if I close the tab"', () => {
	test('the tab closed while the server was down: the service worker delivers the email once, and the next visit shows it sent', async () => {
		// Thirty attempts: the page is still retrying, the intent `sending`, when its tab closes.
		const page = await openDemo(`${FAST}&attempts=30`);
		await page.getByLabel('Deliver even if I close the tab').check();
		await page.evaluate(async () => navigator.serviceWorker.ready);
		await fill(page, DRAFT);
		await serverDown(page, true);
		await page.getByTestId('send').click();
		// A retry: the page asked for a Background Sync.
		await expect.poll(() => demo.api.requests.length).toBeGreaterThanOrEqual(2);
		const key = (await outcome(page)).key;
		expect(key).toMatch(UUID);

		await page.close();
		await fetch(`${demo.url}/demo/chaos`, {method: 'POST', headers: {'content-type': 'application/json'}, body: JSON.stringify({action: 'up'})});
		await fireSync(context, demo.url);

		await expect.poll(async () => (await stats()).delivered, {timeout: 10_000}).toBe(1);
		expect(distinctKeys()).toEqual([key]);
		expect(new Set(demo.api.requests.map(request => request.body))).toEqual(new Set([BODY]));
		expect(demo.api.requests.at(-1)!.outcome).toBe(201);

		const later = await context.newPage();
		later.on('pageerror', error => pageErrors.push(error));
		await later.goto(`${demo.url}/${FAST}`);
		expect(await reaches(later, 'succeeded')).toBe(key);
		await later.getByText(messages.sent).waitFor();
		expect(await later.getByLabel('Deliver even if I close the tab').isChecked()).toBe(true);
		expect(demo.api.totalEffects).toBe(1);
	});
});

describe.each(EXAMPLES)('the %s form says what happened', example => {
	test('server down, 503 every time: the server "kept answering with errors (503)", not a failed connection', async () => {
		const page = await openDemo(FAST, example);
		await fill(page, DRAFT);
		await serverDown(page, true);
		await page.getByTestId('send').click();
		await reaches(page, 'unresolved');

		expect(await unsure(page)).toEqual({headline: messages.mayHaveBeenSent, because: 'The server kept answering with errors (503).'});
		expect(demo.api.requests.map(request => request.outcome)).toEqual([503, 503, 503, 503, 503]);
		expect(demo.api.totalEffects).toBe(0);
		await expect.poll(async () => pageOutcomes(page)).toEqual(['503', '503', '503', '503', '503']);
	});

	test('the server stopped: "the connection failed"; started again, Retry sends the same key, and one email is delivered', async () => {
		const page = await openDemo(FAST, example);
		await fill(page, DRAFT);
		const {port} = new URL(demo.url);
		await demo.close();

		await page.getByTestId('send').click();
		const key = await reaches(page, 'unresolved');
		// The page cannot tell a server that never got the request from one that lost its reply.
		expect(await unsure(page)).toEqual({headline: messages.mayHaveBeenSent, because: 'The connection failed before the server could confirm it.'});
		expect(await editable(page)).toEqual([false, false, false]);

		demo = await startDemoServer({port: Number(port), root: dists[example]});
		await page.getByTestId('retry').click();
		expect(await reaches(page, 'succeeded')).toBe(key);
		expect(demo.api.requests.map(({key, outcome}) => ({key, outcome}))).toEqual([{key, outcome: 201}]);
		expect(demo.api.totalEffects).toBe(1);
	});

	test('a lost reply and no attempt left: "the connection failed", the email was delivered once, and the log shows every request dropped', async () => {
		const page = await openDemo(`${FAST}&attempts=1`, example);
		await fill(page, DRAFT);
		await page.getByTestId('chaos-lose-reply').click();
		await expect.poll(async () => (await stats()).queued).toEqual([{type: 'lose-reply'}]);
		// Chromium itself resends, with the same key, a request whose kept-alive connection
		// dropped (three times at most, as seen here): drops queued behind the lost reply make its
		// resends fail too, so that the page sees the connection fail whether Chromium resends or not.
		demo.api.faults.push(...Array.from({length: 10}, () => ({type: 'drop-before' as const})));
		await page.getByTestId('send').click();
		const key = await reaches(page, 'unresolved');

		expect(await unsure(page)).toEqual({headline: messages.mayHaveBeenSent, because: 'The connection failed before the server could confirm it.'});
		expect(demo.api.totalEffects).toBe(1);
		expect(distinctKeys()).toEqual([key]);
		await expect.poll(async () => page.getByTestId('delivered-count').textContent()).toBe('1');
		await expect.poll(async () => (await pageLog(page)).length).toBe(demo.api.requests.length);
		expect((await pageLog(page)).map(({key, outcome}) => ({key, outcome}))).toEqual(demo.api.requests.map(() => ({key, outcome: 'dropped'})));
	});

	// Mostly the server's slow work, which is the same under either form; the Vue form's words for an
	// unresolved send are read in the tests above.
	if (example === 'react') {
		test('slow work, one attempt: the server "did not answer in time"; its late 201 reached no one, and the log says so', async () => {
			const page = await openDemo(`${FAST}&attempts=1`, example);
			await fill(page, DRAFT);
			await page.getByTestId('chaos-slow').click();
			await expect.poll(async () => (await stats()).queued).toEqual([{type: 'slow', ms: SLOW_MS}]);
			await page.getByTestId('send').click();
			// While the server works, the page waits, and the log says so.
			await expect.poll(async () => pageOutcomes(page)).toEqual(['waiting']);

			const key = await reaches(page, 'unresolved');
			expect(await unsure(page)).toEqual({headline: messages.mayHaveBeenSent, because: 'The server did not answer in time.'});
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
	}
});

describe.each(EXAMPLES)('the %s form while its message may have been sent', example => {
	test('the panel says how to make it (a queued fault comes before "Server down"), and doing as it says makes it, one email delivered', async () => {
		const {page} = await deliveredThenDown(example);
		expect(await page.getByTestId('chaos-down-what').textContent()).toContain('press "Lose the next reply", switch the server down, then Send');
		expect(await page.getByRole('alert').getByText(messages.mayHaveBeenSent).count()).toBe(1);
		expect(demo.api.totalEffects).toBe(1);
	});

	test('the fields are locked on the text that may have been sent, and Retry sends that text with the same key', async () => {
		const {page, key} = await deliveredThenDown(example);
		expect(await editable(page)).toEqual([false, false, false]);
		expect(await fields(page)).toEqual(DRAFT);
		expect(await page.getByTestId('locked').isVisible()).toBe(true);
		expect(await page.getByTestId('send').count()).toBe(0);

		await serverDown(page, false);
		await page.getByTestId('retry').click();
		expect(await reaches(page, 'succeeded')).toBe(key);
		expect(demo.api.totalEffects).toBe(1);
		expect(distinctKeys()).toEqual([key]);
		expect(new Set(demo.api.requests.map(request => request.body))).toEqual(new Set([BODY]));
	});

	test('Edit, change the text and press Send: nothing is sent until the user chooses; "Retry the earlier message" sends the earlier text', async () => {
		const {page, key} = await deliveredThenDown(example);
		await serverDown(page, false);
		await page.getByTestId('edit').click();
		expect(await editable(page)).toEqual([true, true, true]);
		// While editing, the only way on is Send, which asks first.
		expect(await page.getByTestId('retry').count()).toBe(0);
		await page.getByLabel('Message', {exact: true}).fill(EDITED.message);
		const requests = demo.api.requests.length;

		await page.getByTestId('send').click();
		await page.getByTestId('conflict').waitFor();
		expect(await page.getByTestId('conflict').locator('strong').textContent()).toBe(messages.conflict);
		expect(await fields(page)).toEqual(EDITED);
		expect(await editable(page)).toEqual([false, false, false]);
		expect(await stateOf(page)).toBe('unresolved');
		expect(demo.api.requests.length).toBe(requests);

		await page.getByTestId('retry').click();
		expect(await reaches(page, 'succeeded')).toBe(key);
		// The fields show again what was sent.
		expect(await fields(page)).toEqual(DRAFT);
		expect(await page.getByTestId('replayed').textContent()).toBe(messages.replayed);
		expect(demo.api.totalEffects).toBe(1);
		expect(distinctKeys()).toEqual([key]);
		expect(new Set(demo.api.requests.map(request => request.body))).toEqual(new Set([BODY]));
	});
});

/**
 * A press of Send whose request is lost before the server, with the server down for every retry:
 * the page ends unresolved, and nothing was delivered.
 */
async function lostThenDown(page: Page): Promise<string> {
	await fill(page, DRAFT);
	await page.getByTestId('chaos-lose-request').click();
	await expect.poll(async () => (await stats()).queued).toEqual([{type: 'drop-before'}]);
	await serverDown(page, true);
	await page.getByTestId('send').click();
	return reaches(page, 'unresolved');
}

describe.each(EXAMPLES)('the %s form: "Check whether it arrived" (issue 33)', example => {
	test('the request lost before the server, the server down, then up: Check shows "not sent"; the original delivered late is refused; "Send it now" delivers one email under a new key', async () => {
		const page = await openDemo(FAST, example);
		const key = await lostThenDown(page);
		await serverDown(page, false);
		await page.getByTestId('check').click();
		expect(await reaches(page, 'not-sent')).toBe(key);
		expect(await page.getByTestId('not-sent').locator('strong').textContent()).toBe(messages.notSent);
		// Nothing of it is left to send: the store holds no intent.
		expect(await page.evaluate(async () => new Promise<number>(resolve => {
			const open = indexedDB.open('sendonce');
			open.onsuccess = () => {
				const database = open.result;
				const names = [...database.objectStoreNames];
				if (names.length === 0) {
					resolve(0);
					return;
				}

				const count = database.transaction(names[0]!).objectStore(names[0]!).count();
				count.onsuccess = () => resolve(count.result);
			};
		}))).toBe(0);

		// The original request, held on the way and delivered now: same key, same bytes.
		const late = await fetch(`${demo.url}/api/contact`, {method: 'POST', headers: {'content-type': 'application/json', 'idempotency-key': key}, body: BODY});
		expect(late.status).toBe(410);
		expect(demo.api.totalEffects).toBe(0);

		await page.getByTestId('send-now').click();
		const fresh = await reaches(page, 'succeeded');
		expect(fresh).not.toBe(key);
		expect(demo.api.totalEffects).toBe(1);
		expect(new Set(demo.api.requests.filter(request => request.body !== '').map(request => request.body))).toEqual(new Set([BODY]));
	});
});

describe('the React form: "Check whether it arrived", further (issue 33)', () => {
	test('the reply lost after the work, the server down, then up: Check shows "sent" with the stored answer, and the server delivered one email', async () => {
		const {page, key} = await deliveredThenDown();
		await serverDown(page, false);
		await page.getByTestId('check').click();
		expect(await reaches(page, 'succeeded')).toBe(key);
		expect(await page.getByTestId('replayed').textContent()).toBe(messages.replayed);
		expect(demo.api.totalEffects).toBe(1);
		expect(distinctKeys()).toEqual([key]);
		// The check carried the key and no body.
		const checks = demo.api.requests.filter(request => request.headers['idempotency-check'] !== undefined);
		expect(checks.map(({key, body}) => ({key, body}))).toEqual([{key, body: ''}]);
	});

	test('Check while the server is still down: it cannot tell, says so, and Retry still works afterwards', async () => {
		const {page, key} = await deliveredThenDown();
		await page.getByTestId('check').click();
		await expect.poll(async () => page.getByTestId('checked').textContent()).toBe(messages.checkFound({status: 'unknown', key, reason: 'no-answer'}));
		expect(await stateOf(page)).toBe('unresolved');
		await serverDown(page, false);
		await page.getByTestId('retry').click();
		expect(await reaches(page, 'succeeded')).toBe(key);
		expect(demo.api.totalEffects).toBe(1);
	});
});

describe('two tabs of the React form: one checks while the other retries (issue 33)', () => {
	test.each(['lost request', 'lost reply'] as const)('after a %s: one outcome in both tabs, and at most one email', async lost => {
		const first = await openDemo(FAST);
		const key = lost === 'lost reply' ? (await lostReplyIn(first)) : await lostThenDown(first);
		const second = await context.newPage();
		second.on('pageerror', error => pageErrors.push(error));
		await second.goto(`${demo.url}/${FAST}`);
		expect(await reaches(second, 'unresolved')).toBe(key);
		await serverDown(first, false);

		await Promise.all([first.getByTestId('check').click(), second.getByTestId('retry').click()]);
		const settled = (state: string | null) => state === 'succeeded' || state === 'not-sent';
		await expect.poll(async () => settled(await stateOf(first)) && settled(await stateOf(second)), {timeout: 10_000}).toBe(true);
		const outcome = await stateOf(first);
		expect(await stateOf(second)).toBe(outcome);
		expect(demo.api.totalEffects).toBe(outcome === 'succeeded' ? 1 : 0);
		if (lost === 'lost reply') expect(outcome).toBe('succeeded');
		expect(distinctKeys()).toEqual([key]);
	});
});

describe('the React form under a second attack (issue 33, test/browser/attack-33d.test.ts)', () => {
	test('page clock 1.5 s fast (the demo server allows no clock margin): reply lost, "Forget the stored keys", Check never says "not sent" for the delivered email', async () => {
		await context.addInitScript(() => {
			const real = Date.now;
			Date.now = () => real() + 1500;
		});
		const {page} = await deliveredThenDown();
		await expect.poll(async () => page.getByTestId('delivered-count').textContent()).toBe('1');
		await page.getByTestId('chaos-forget-keys').click();
		await serverDown(page, false);
		// Until the server's clock passes the page's `createdAt`, a server reading `created` alone would not judge.
		await new Promise(resolve => setTimeout(resolve, 1700));
		await page.getByTestId('check').click();
		await expect.poll(async () => page.getByTestId('checked').count()).toBe(1);
		expect(await stateOf(page)).toBe('unresolved');
		expect(demo.api.totalEffects).toBe(1);
	});

	test('two tabs: the first closed in the middle of its Retry, the second presses Check while the server is down: it shows Retry and Check, not "Sending…"', async () => {
		const first = await openDemo(FAST);
		await lostThenDown(first);
		const second = await context.newPage();
		second.on('pageerror', error => pageErrors.push(error));
		await second.goto(`${demo.url}/${FAST}`);
		await reaches(second, 'unresolved');
		const before = demo.api.requests.length;
		await first.getByTestId('retry').click();
		await expect.poll(() => demo.api.requests.length).toBeGreaterThan(before);
		await first.close();

		await second.getByTestId('check').click();
		await expect.poll(async () => second.getByTestId('checked').count(), {timeout: 10_000}).toBe(1);
		expect(await stateOf(second)).toBe('unresolved');
		expect(await second.getByTestId('retry').count()).toBe(1);
	});

	test.each([
		['Check then Retry', ['check', 'retry']],
		['Retry then Check', ['retry', 'check']],
	])('%s in quick succession, the server up after a lost request: one outcome, no "Checking…" left, at most one email', async (_, presses) => {
		const page = await openDemo(FAST);
		await lostThenDown(page);
		await serverDown(page, false);
		await page.evaluate(ids => {
			for (const id of ids) (document.querySelector(`[data-testid="${id}"]`) as HTMLButtonElement | null)?.click();
		}, presses);
		await expect.poll(async () => ['succeeded', 'not-sent'].includes(String(await stateOf(page))), {timeout: 10_000}).toBe(true);
		expect(demo.api.totalEffects).toBe(await stateOf(page) === 'succeeded' ? 1 : 0);
		expect(await page.getByText(messages.checking).count()).toBe(0);
	});

	test('Retry, then Check while that send runs (server down): once it ends unresolved, the form does not say the server is still working on it', async () => {
		const page = await openDemo(FAST);
		const key = await lostThenDown(page);
		await page.evaluate(() => {
			(document.querySelector('[data-testid="retry"]') as HTMLButtonElement).click();
			(document.querySelector('[data-testid="check"]') as HTMLButtonElement).click();
		});
		await reaches(page, 'unresolved', 15_000);
		await expect.poll(async () => page.getByText(messages.checking).count()).toBe(0);
		const said = await page.getByTestId('checked').count() ? await page.getByTestId('checked').textContent() : undefined;
		expect(said).not.toBe(messages.checkFound({status: 'running', key}));
	});
});

/** `deliveredThenDown`'s press, on a page already open. */
async function lostReplyIn(page: Page): Promise<string> {
	await fill(page, DRAFT);
	await page.getByTestId('chaos-lose-reply').click();
	await expect.poll(async () => (await stats()).queued).toEqual([{type: 'lose-reply'}]);
	await serverDown(page, true);
	await page.getByTestId('send').click();
	return reaches(page, 'unresolved');
}

describe('the React form while its message may have been sent, further', () => {
	test('Edit, change the text, Send, then "Send this text as a new message": the edited text under a new key, one more email', async () => {
		const {page, key: first} = await deliveredThenDown();
		await serverDown(page, false);
		await page.getByTestId('edit').click();
		await page.getByLabel('Message', {exact: true}).fill(EDITED.message);
		await page.getByTestId('send').click();
		await page.getByTestId('conflict').waitFor();

		await page.getByTestId('send-as-new').click();
		const second = await reaches(page, 'succeeded');
		expect(second).not.toBe(first);
		expect(await fields(page)).toEqual(EDITED);
		expect(demo.api.totalEffects).toBe(2);
		expect(distinctKeys()).toEqual([first, second]);
		expect(demo.api.requests.filter(request => request.key === second).map(({body, outcome}) => ({body, outcome}))).toEqual([{body: EDITED_BODY, outcome: 201}]);
		expect(new Set(demo.api.requests.filter(request => request.key === first).map(request => request.body))).toEqual(new Set([BODY]));
	});

	test('edits undone by "Back to the earlier text", or by a reload, leave the fields locked on the earlier text', async () => {
		const {page, key} = await deliveredThenDown();
		await page.getByTestId('edit').click();
		await page.getByLabel('Message', {exact: true}).fill(EDITED.message);
		await page.getByTestId('cancel-edit').click();
		expect(await fields(page)).toEqual(DRAFT);
		expect(await editable(page)).toEqual([false, false, false]);

		await page.getByTestId('edit').click();
		await page.getByLabel('Message', {exact: true}).fill(EDITED.message);
		await page.reload();
		await expect.poll(async () => outcome(page), {timeout: 5000}).toEqual({state: 'unresolved', key});
		expect(await fields(page)).toEqual(DRAFT);
		expect(await editable(page)).toEqual([false, false, false]);
		expect(distinctKeys()).toEqual([key]);
	});
});

describe('what the React form says, further', () => {
	test('a 401 after a 503: "we could not confirm it", with the status; Retry, signed in again, sends the same key', async () => {
		const page = await openDemo(FAST);
		await fill(page, DRAFT);
		await page.getByTestId('chaos-error-503').click();
		await page.getByTestId('chaos-error-401').click();
		await expect.poll(async () => (await stats()).queued).toEqual([{type: 'error-before', status: 503}, {type: 'error-before', status: 401}]);
		await expect.poll(async () => page.getByTestId('queued').textContent()).toBe('Next requests: answer 503, then answer 401');

		await page.getByTestId('send').click();
		const key = await reaches(page, 'unresolved');
		// The 503 may have come after the work (from a proxy, say): the 401 cannot mean "not sent".
		expect(await unsure(page)).toEqual({headline: messages.mayHaveBeenSent, because: messages.notConfirmed(401)});
		expect(demo.api.requests.map(({key, outcome}) => ({key, outcome}))).toEqual([{key, outcome: 503}, {key, outcome: 401}]);
		expect(await page.getByText(messages.retryHint).count()).toBe(0);

		await page.getByTestId('retry').click();
		expect(await reaches(page, 'succeeded')).toBe(key);
		expect(demo.api.totalEffects).toBe(1);
		expect(distinctKeys()).toEqual([key]);
	});

	test('slow work, two attempts: the server "was still working on it"; the log shows the given-up request and the 409', async () => {
		const page = await openDemo(`${FAST}&attempts=2`);
		await fill(page, DRAFT);
		// Slower than the panel's slow work: the second attempt comes at 3–3.4 s, well before the end.
		demo.api.faults.push({type: 'slow', ms: 10_000});
		await page.getByTestId('send').click();

		const key = await reaches(page, 'unresolved');
		expect(await unsure(page)).toEqual({headline: messages.mayHaveBeenSent, because: 'The server was still working on it when we stopped asking.'});
		await expect.poll(async () => pageLog(page)).toEqual([
			{key, outcome: 'gave-up', text: expect.any(String)},
			{key, outcome: '409', text: expect.any(String)},
		]);
	});
});

describe('the server\'s request log', () => {
	test('a 502 after the work stays 502 in the log; the retry\'s stored answer is marked as replayed', async () => {
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
		await expect.poll(async () => requestsReceived(page)).toBe('2 requests received');
	});
});

describe.each(EXAMPLES)('the %s page', example => {
	test('the intro puts the panel on the right on a wide screen, and below the form on a phone', async () => {
		const page = await openDemo(FAST, example);
		const intro = page.locator('.intro');
		await page.setViewportSize({width: 1120, height: 860});
		await expect.poll(async () => intro.innerText()).toMatch(/with the server's panel on the right\. /);
		await page.setViewportSize({width: 390, height: 844});
		await expect.poll(async () => intro.innerText()).toMatch(/with the server's panel below the form\. /);
		expect(await intro.innerText()).not.toContain('on the right');
	});

	test('the panel counts "2 requests", then "0 requests" after a reset, then "1 request"', async () => {
		const page = await openDemo(FAST, example);
		await fill(page, DRAFT);
		await page.getByTestId('chaos-error-503').click();
		await expect.poll(async () => (await stats()).queued).toEqual([{type: 'error-before', status: 503}]);
		await page.getByTestId('send').click();
		await reaches(page, 'succeeded');
		await expect.poll(async () => requestsReceived(page)).toBe('2 requests received');
		await page.getByRole('button', {name: 'Write another message'}).click();
		await page.getByTestId('chaos-reset').click();
		await expect.poll(async () => requestsReceived(page)).toBe('0 requests received');

		await fill(page, DRAFT);
		await page.getByTestId('send').click();
		await reaches(page, 'succeeded');
		await expect.poll(async () => requestsReceived(page)).toBe('1 request received');
	});

	test('each way to start over says what it forgets', async () => {
		const page = await openDemo(FAST, example);
		for (const {action, label, what} of RESETS) {
			const item = page.getByTestId(`chaos-${action}`).locator('xpath=..');
			expect(await item.innerText()).toBe(`${label}\n${what}`);
		}
	});

	// What the server keeps is the same under either form: the React one shows it (the Vue panel's
	// buttons are the same list, RESETS, read in "each way to start over says what it forgets").
	if (example === 'react') {
		test('"Reset the counters" keeps the stored keys: Retry of a delivered message gets its stored answer, and nothing is delivered again', async () => {
			const {page, key} = await deliveredThenDown(example);
			await expect.poll(async () => page.getByTestId('delivered-count').textContent()).toBe('1');
			await page.getByTestId('chaos-reset').click();
			await expect.poll(async () => stats()).toMatchObject({delivered: 0, requests: 0, down: false, queued: [], recent: []});
			await expect.poll(async () => page.getByTestId('delivered-count').textContent()).toBe('0');

			await page.getByTestId('retry').click();
			expect(await reaches(page, 'succeeded')).toBe(key);
			expect(demo.api.totalEffects).toBe(0);
			expect(demo.api.requests.map(({key, outcome}) => ({key, outcome}))).toEqual([{key, outcome: 201}]);
			expect(await page.getByTestId('replayed').textContent()).toBe(messages.replayed);
			await expect.poll(async () => pageLog(page)).toEqual([{key, outcome: '201', text: expect.stringMatching(/→ 201, the stored answer replayed$/)}]);
			expect(await page.getByTestId('delivered-count').textContent()).toBe('0');
		});

		test('"Forget the stored keys": Retry of a delivered message is delivered again, as the panel says, under the same key', async () => {
			const {page, key} = await deliveredThenDown(example);
			await expect.poll(async () => page.getByTestId('delivered-count').textContent()).toBe('1');
			await serverDown(page, false);
			const forgotten = page.waitForResponse(response => response.url().endsWith('/demo/chaos'));
			await page.getByTestId('chaos-forget-keys').click();
			expect((await forgotten).ok()).toBe(true);

			await page.getByTestId('retry').click();
			expect(await reaches(page, 'succeeded')).toBe(key);
			expect(await page.getByTestId('replayed').count()).toBe(0);
			expect(demo.api.totalEffects).toBe(2);
			expect(distinctKeys()).toEqual([key]);
			expect(new Set(demo.api.requests.map(request => request.body))).toEqual(new Set([BODY]));
			await expect.poll(async () => page.getByTestId('delivered-count').textContent()).toBe('2');
		});
	}

	test('the icon is inline, so Chromium asks for no /favicon.ico; nothing else the page asks for is missing either', async () => {
		const page = await openDemo(FAST, example);
		// Chromium fetches a page's icon itself, unseen by Playwright: what it fetches is the page's to say.
		const icons = page.locator('link[rel="icon"]');
		expect(await icons.count()).toBe(1);
		expect(await icons.getAttribute('href')).toMatch(/^data:image\/svg\+xml,/);
		// afterEach checks that nothing the page asked for was answered 404.
	});
});

/*
 * The full mode (`DATABASE_URL=… npm run demo`, issue 34): the same page in front of the outbox
 * example's web process, job queue and mail server. What counts is what the mail server received.
 */
describe.skipIf(inject('databaseUrl') === null)('the demo in its full mode: PostgreSQL, the job queue and a mail server', () => {
	let full: FullDemoServer;
	let database: Awaited<ReturnType<typeof freshDatabase>>;
	beforeAll(async () => {
		database = await freshDatabase(inject('databaseUrl')!);
		full = await startFullDemo({databaseUrl: database.url, port: 0, root: dists.react, output: 'ignore'});
	}, 60_000);
	afterAll(async () => {
		await full?.close();
		await database?.drop();
	});

	const chaos = async (page: Page, action: string) => {
		const before = (await full.stats()).queued.length;
		await page.getByTestId(`chaos-${action}`).click();
		// A fault for the web process is queued; the worker's and the mail server's are told at once.
		if (Object.hasOwn(CHAOS, action)) await expect.poll(async () => (await full.stats()).queued.length).toBe(before + 1);
	};

	test('every chaos option, one press each: one email received per press (a copy the worker sent again carries the same Message-ID, shown apart)', async () => {
		const page = await context.newPage();
		page.on('pageerror', error => pageErrors.push(error));
		await page.goto(`${full.url}/${FAST}`);
		await expect.poll(async () => page.getByTestId('mail').textContent(), {timeout: 5000}).toMatch(/received 0 messages/);
		const presses: Array<{action: string; expected: string}> = [];
		let resentExpected = 0;
		for (const action of [...Object.keys(CHAOS), 'down', 'mail-lose-reply', 'kill-worker']) {
			const draft = {...DRAFT, message: `Sent through "${action}"`};
			await fill(page, draft);
			if (action === 'down') await page.getByTestId('chaos-down').check();
			else await chaos(page, action);
			await page.getByTestId('send').click();
			if (action === 'down') {
				// Every attempt answered 503: unresolved; the server up again, Retry sends the same key.
				const key = await reaches(page, 'unresolved');
				await page.getByTestId('chaos-down').uncheck();
				await expect.poll(async () => (await full.stats()).down).toBe(false);
				await page.getByTestId('retry').click();
				expect(await reaches(page, 'succeeded')).toBe(key);
			} else if (action === 'error-401') {
				// Refused before any work: nothing sent; Send again is a new message, sent once.
				await reaches(page, 'failed');
				await page.getByTestId('send').click();
				await reaches(page, 'succeeded');
			} else {
				await reaches(page, 'succeeded', 15_000);
			}

			if (action === 'mail-lose-reply' || action === 'kill-worker') resentExpected++;
			presses.push({action, expected: draft.message});
			// Received, and every job done, before the next press (so that the worker's fault meets this one).
			await expect.poll(async () => full.stats(), {timeout: 20_000}).toMatchObject({delivered: presses.length, mail: {resent: resentExpected, jobsLeft: 0}});
			await expect.poll(async () => page.getByTestId('delivered-count').textContent()).toBe(String(presses.length));
			await page.getByRole('button', {name: 'Write another message'}).click();
		}

		const received = await full.chain.received();
		const subjects = received.map(({messageId}) => messageId);
		// One Message-ID per press, each received once, and twice for the two faults after the hand-off.
		expect(new Set(subjects).size).toBe(presses.length);
		expect(received).toHaveLength(presses.length + 2);
		await expect.poll(async () => page.getByTestId('mail').textContent()).toBe(`The mail server received ${presses.length + 2} messages: 2 copies with a Message-ID received before, which the receiving side drops. No job waiting.`);
	}, 120_000);

	test('the request lost before the server, the server down, then up: "Check whether it arrived" says not sent, and "Send it now" sends one email', async () => {
		const before = (await full.stats()).delivered;
		const page = await context.newPage();
		await page.goto(`${full.url}/${FAST}`);
		await fill(page, {...DRAFT, message: 'Checked, then sent now'});
		await chaos(page, 'lose-request');
		await page.getByTestId('chaos-down').check();
		await page.getByTestId('send').click();
		const key = await reaches(page, 'unresolved');
		await page.getByTestId('chaos-down').uncheck();
		await expect.poll(async () => (await full.stats()).down).toBe(false);
		await page.getByTestId('check').click();
		expect(await reaches(page, 'not-sent')).toBe(key);
		await page.getByTestId('send-now').click();
		expect(await reaches(page, 'succeeded')).not.toBe(key);
		await expect.poll(async () => full.stats(), {timeout: 20_000}).toMatchObject({delivered: before + 1, mail: {jobsLeft: 0}});
	});
});
