import {execFile} from 'node:child_process';
import {mkdir, mkdtemp, rm, writeFile} from 'node:fs/promises';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {promisify} from 'node:util';
import {chromium as playwright, type Page} from 'playwright-core';
import {sharedProcess, unlessExecutable, type Browser, type Engine, type LaunchOptions, type Tab} from './engine.js';

/** Debian's Chromium, or the binary CHROME_PATH names; never a downloaded one. */
const executablePath = process.env.CHROME_PATH ?? '/usr/bin/chromium';

/** No sandbox (containers, root) and nothing that talks to Google behind the test's back. */
const args = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];

function tab(page: Page): Tab {
	return {
		evaluate: async (fn, arg) => page.evaluate(fn as never, arg) as never,
		goto: async url => void await page.goto(url),
		reload: async () => void await page.reload(),
		close: async () => page.close({runBeforeUnload: true}),
	};
}

/** Chromium driven by playwright-core over the DevTools protocol. */
export const chromium: Engine = {
	name: 'Chromium',
	missing: async () => unlessExecutable(executablePath, `no Chromium at ${executablePath} (apt-get install chromium, or set CHROME_PATH)`),
	async version() {
		const {stdout} = await promisify(execFile)(executablePath, ['--version']);
		return stdout.trim().split(' built ')[0]!;
	},
	...sharedProcess(
		async () => playwright.launch({executablePath, headless: true, args}),
		async browser => {
			const context = await browser.newContext();
			return {
				async open(url) {
					const page = await context.newPage();
					if (url) await page.goto(url);
					return tab(page);
				},
				close: async () => context.close(),
			};
		},
		async browser => browser.close(),
	),
	async launch({profile, blockSiteData}: LaunchOptions = {}): Promise<Browser> {
		const own = profile ? undefined : await mkdtemp(join(tmpdir(), 'sendonce-chromium-'));
		const directory = profile ?? own!;
		if (blockSiteData) {
			// The setting "Don't allow sites to save data on your device".
			await mkdir(join(directory, 'Default'), {recursive: true});
			await writeFile(join(directory, 'Default', 'Preferences'), JSON.stringify({profile: {default_content_setting_values: {cookies: 2}}}));
		}

		const context = await playwright.launchPersistentContext(directory, {executablePath, headless: true, args});
		// The persistent context opens a first, blank tab: the scenarios open their own.
		const blank = context.pages();
		return {
			async open(url) {
				const page = await context.newPage();
				await Promise.all(blank.splice(0).map(async page => page.close()));
				if (url) await page.goto(url);
				return tab(page);
			},
			async close() {
				await context.close();
				if (own) await rm(own, {recursive: true, force: true});
			},
		};
	},
};
