import {execFile} from 'node:child_process';
import {promisify} from 'node:util';
import puppeteer, {type Page} from 'puppeteer-core';
import {sharedProcess, unlessExecutable, type Browser, type Engine, type LaunchOptions, type Tab} from './engine.js';

/** Debian's Firefox ESR, or the binary FIREFOX_PATH names; never a downloaded one. */
const executablePath = process.env.FIREFOX_PATH ?? '/usr/bin/firefox-esr';

function tab(page: Page): Tab {
	return {
		evaluate: async (fn, arg) => page.evaluate(fn as never, arg) as never,
		goto: async url => void await page.goto(url),
		reload: async () => void await page.reload(),
		close: async () => page.close(),
	};
}

/** Firefox ESR driven by puppeteer-core over WebDriver BiDi. */
export const firefox: Engine = {
	name: 'Firefox ESR',
	missing: async () => unlessExecutable(executablePath, `no Firefox ESR at ${executablePath} (apt-get install firefox-esr, or set FIREFOX_PATH)`),
	async version() {
		const {stdout} = await promisify(execFile)(executablePath, ['--version']);
		return stdout.trim().replace(/^Mozilla /, '');
	},
	...sharedProcess(
		async () => puppeteer.launch({browser: 'firefox', protocol: 'webDriverBiDi', executablePath, headless: true}),
		async browser => {
			const context = await browser.createBrowserContext();
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
		const browser = await puppeteer.launch({
			browser: 'firefox',
			protocol: 'webDriverBiDi',
			executablePath,
			headless: true,
			// Without one, puppeteer makes a temporary profile and removes it on close.
			...(profile ? {userDataDir: profile} : {}),
			// "Block all cookies", which also blocks every kind of site data.
			extraPrefsFirefox: blockSiteData ? {'network.cookie.cookieBehavior': 2} : {},
		});
		const blank = await browser.pages();
		return {
			async open(url) {
				const page = await browser.newPage();
				await Promise.all(blank.splice(0).map(async page => page.close()));
				if (url) await page.goto(url);
				return tab(page);
			},
			close: async () => browser.close(),
		};
	},
};
