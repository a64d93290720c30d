/**
 * Takes docs/unresolved.png: the contact-form demo after its reply was lost and the server
 * went down, so that every retry ran out and the page says the message may have been sent.
 *
 *   npm run demo:screenshot     (builds the example, starts the demo server on a free port)
 *
 * Uses Debian's Chromium (or CHROME_PATH) through playwright-core: no browser is downloaded.
 */
import {mkdir} from 'node:fs/promises';
import {dirname} from 'node:path';
import {fileURLToPath} from 'node:url';
import {chromium} from 'playwright-core';
import {build} from 'vite';
import {startDemoServer, type DemoStats} from '../examples/server/demo-server.js';
import {messages} from '../src/bindings/react.js';

const OUT = fileURLToPath(new URL('../docs/unresolved.png', import.meta.url));

const count = (n: number, one: string) => `${n} ${n === 1 ? one : `${one}s`}`;

await build({configFile: fileURLToPath(new URL('../examples/react-form/vite.config.ts', import.meta.url))});
const demo = await startDemoServer({port: 0});
const browser = await chromium.launch({
	executablePath: process.env.CHROME_PATH ?? '/usr/bin/chromium',
	headless: true,
	args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
});

try {
	const page = await browser.newPage({viewport: {width: 1120, height: 860}});
	await page.goto(`${demo.url}/`);
	await page.getByLabel('Name', {exact: true}).fill('Ada Lovelace');
	await page.getByLabel('Email', {exact: true}).fill('ada@example.com');
	await page.getByLabel('Message', {exact: true}).fill('Hello! Could you send me the notes on the Analytical Engine?');

	// The first attempt delivers the email and loses the reply; every retry then gets a 503.
	await page.getByTestId('chaos-lose-reply').click();
	await page.getByTestId('chaos-down').click();
	await page.locator('[data-testid="chaos-down"]:checked').waitFor();
	await page.getByTestId('send').click();

	const outcome = page.locator('[data-testid="outcome"][data-state="unresolved"]');
	await outcome.waitFor({timeout: 60_000});
	await page.getByText(messages.mayHaveBeenSent).waitFor();
	// What the picture shows: the page's count of attempts, and the panel's counts once they
	// have caught up with the server's. The server may count one request more than the page's
	// attempts: Chromium resends by itself a request whose kept-alive connection dropped.
	const attempts = Number(await outcome.getAttribute('data-attempts'));
	const stats = await (await fetch(`${demo.url}/demo/stats`)).json() as DemoStats;
	await page.getByTestId('requests-count').filter({hasText: new RegExp(`^${stats.requests}$`)}).waitFor();
	await page.getByTestId('delivered-count').filter({hasText: new RegExp(`^${stats.delivered}$`)}).waitFor();

	await mkdir(dirname(OUT), {recursive: true});
	await page.screenshot({path: OUT, fullPage: true});
	console.log(`${OUT}: unresolved after ${count(attempts, 'attempt')} (${count(stats.requests, 'request')} received by the server), ${count(stats.delivered, 'email')} delivered`);
} finally {
	await browser.close();
	await demo.close();
}
