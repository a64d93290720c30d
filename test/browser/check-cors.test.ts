import {randomUUID} from 'node:crypto';
import {createServer, type Server} from 'node:http';
import type {Browser, BrowserContext, Page} from 'playwright-core';
import {afterAll, afterEach, beforeAll, beforeEach, expect, test} from 'vitest';
import type {Verdict} from '../../src/cli/probe.js';
import {corsEntries, type CorsEntry} from '../cli/corpus/cors.js';
import {runCheck, TWO_USERS} from '../cli/run.js';
import {closeNow, listenOnLoopback} from '../server/loopback.js';
import {launchBrowser} from './harness.js';

/*
 * Probe 7 of `sendonce check` against a real Chromium (issue 21): for every CORS server of the
 * corpus, the CLI's verdict is what Chromium does with a sendonce client's request from a page
 * on another origin. The page and the API are both on 127.0.0.1 (two ports, two origins), so
 * that Private Network Access, which guards only requests into a more private address space,
 * has no say.
 */

const BODY = '{"sku":"A1"}';

/** What a page on `pageOrigin` saw of its request, sent twice with one key, and what the server did. */
interface Seen {
	/** `fail`: a fetch rejected; `warn`: the replay's `Idempotent-Replayed` is hidden from the page, or Chromium flagged the request deprecated; `pass`: neither. */
	verdict: Verdict;
	/** Times the server ran the page's key. */
	executions: number;
	/** Chromium's CORS error (DevTools' name for it), when it refused. */
	corsError?: string;
	/** `Idempotent-Replayed` on the replay as Chromium received it, whether or not the page may read it. */
	sentReplayed?: string;
	/** What Chromium reported as deprecated while it judged the request (DevTools issues). */
	deprecations: string[];
}

let pages: Server;
let pageOrigin: string;
let browser: Browser;
beforeAll(async () => {
	// A blank page: all the test needs is a document on an origin other than the API's.
	pages = createServer((_request, response) => {
		response.writeHead(200, {'content-type': 'text/html; charset=utf-8'});
		response.end('<!doctype html><link rel="icon" href="data:,"><title>page</title>');
	});
	[pageOrigin, browser] = await Promise.all([listenOnLoopback(pages), launchBrowser()]);
});
afterAll(async () => {
	await browser?.close();
	if (pages) await closeNow(pages);
});

// A fresh context per case: no preflight cached, no cookie left from another case.
let context: BrowserContext;
beforeEach(async () => {
	context = await browser.newContext();
});
afterEach(async () => context.close());

/** Sends what a sendonce client sends, twice with one fresh key, from a page on `pageOrigin`. */
async function sendFromPage(page: Page, entry: CorsEntry, url: string, executions: Map<string, number>): Promise<Seen> {
	const key = randomUUID();
	// Why Chromium refused, and what it flagged as deprecated, are only on the DevTools protocol.
	const devtools = await context.newCDPSession(page);
	const failed = new Promise<string | undefined>(resolve => {
		devtools.on('Network.loadingFailed', event => {
			resolve(event.corsErrorStatus?.corsError);
		});
	});
	const deprecations: string[] = [];
	devtools.on('Audits.issueAdded', ({issue}) => {
		if (issue.details.deprecationIssueDetails) deprecations.push(issue.details.deprecationIssueDetails.type);
	});
	await Promise.all([devtools.send('Network.enable'), devtools.send('Audits.enable')]);
	// The second answer of the page's method is the replay; it never comes when Chromium refuses.
	let answered = 0;
	const replay = page.waitForResponse(response => response.request().method() === entry.method && ++answered === 2)
		.then(async response => response.headerValue('idempotent-replayed'), () => null);

	const answers = await page.evaluate(async ({url, method, credentials, key, body}) => {
		// What the page can read of `Idempotent-Replayed`: the second answer is the first's replay.
		const read: Array<string | null> = [];
		for (let attempt = 0; attempt < 2; attempt++) {
			try {
				const response = await fetch(url, {
					method,
					headers: {'Content-Type': 'application/json', Authorization: 'Bearer alice', 'Idempotency-Key': key},
					body,
					credentials: credentials ? 'include' : 'same-origin',
				});
				read.push(response.headers.get('idempotent-replayed'));
			} catch {
				// A TypeError, and nothing more: the page is not told why.
				return {rejected: true, read};
			}
		}

		return {rejected: false, read};
	}, {url, method: entry.method, credentials: entry.credentials, key, body: BODY});

	// Audits.enable sends every issue collected so far before it answers: enabled again, nothing raised while the page sent is missed.
	deprecations.length = 0;
	await devtools.send('Audits.disable');
	await devtools.send('Audits.enable');
	// Let through, but flagged deprecated (AuthorizationCoveredByWildcard): it works until Chromium follows the standard.
	const verdict: Verdict = answers.rejected ? 'fail' : (answers.read[1] === 'true' && deprecations.length === 0 ? 'pass' : 'warn');
	return {
		verdict,
		executions: executions.get(`Bearer alice ${key}`) ?? 0,
		...(answers.rejected ? {corsError: await failed} : {}),
		...(verdict === 'warn' ? {sentReplayed: await replay ?? undefined} : {}),
		deprecations,
	};
}

test.each(corsEntries)('$name: the CLI says $verdicts.cors, as Chromium does', async entry => {
	const api = await entry.start(pageOrigin);
	try {
		const run = await runCheck(api.url, [...entry.flags ?? [], '--origin', pageOrigin, ...TWO_USERS]);
		if (entry.credentials) await context.addCookies([{name: 'session', value: 's-1', url: api.url}]);
		const page = await context.newPage();
		await page.goto(`${pageOrigin}/`);
		const seen = await sendFromPage(page, entry, api.url, api.executions);

		expect(run.verdicts.cors, `${run.stdout}\nChromium: ${JSON.stringify(seen)}`).toBe(seen.verdict);
		expect(seen.verdict, 'the corpus says what Chromium does').toBe(entry.verdicts.cors);
		if (seen.verdict === 'warn') expect(seen.sentReplayed, 'the server sent Idempotent-Replayed on the replay').toBe('true');
		// A refused preflight keeps the request from the server; otherwise it ran once, and the second was its replay.
		expect(seen.executions).toBe(seen.corsError?.includes('Preflight') ? 0 : 1);
	} finally {
		await api.close();
	}
});
