import {execFile, spawn, type ChildProcess} from 'node:child_process';
import {mkdtemp, rm} from 'node:fs/promises';
import {createServer} from 'node:net';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import type {Readable} from 'node:stream';
import {fileURLToPath} from 'node:url';
import {promisify} from 'node:util';
import {Capabilities, WebDriver} from 'selenium-webdriver';
import {Executor, HttpClient} from 'selenium-webdriver/http';
import {unlessExecutable, type Browser, type Engine, type LaunchOptions, type Tab} from './engine.js';

/** Debian's WebKitGTK WebDriver (webkit2gtk-driver). */
const driverPath = process.env.WEBKIT_WEBDRIVER_PATH ?? '/usr/bin/WebKitWebDriver';
const xvfbPath = '/usr/bin/Xvfb';
/** The browser it drives: WebKitGTK itself, keeping its data where we say (see the file). */
const browserPath = fileURLToPath(new URL('webkit-browser.py', import.meta.url));

/** Starts Xvfb on a display it picks; resolves to the process and the display (`:N`). */
async function startXvfb(): Promise<{process: ChildProcess; display: string}> {
	const xvfb = spawn(xvfbPath, ['-displayfd', '3', '-screen', '0', '1280x800x24', '-nolisten', 'tcp'], {stdio: ['ignore', 'ignore', 'ignore', 'pipe']});
	const display = await new Promise<string>((resolve, reject) => {
		let text = '';
		(xvfb.stdio[3] as Readable).on('data', (chunk: Buffer) => {
			text += chunk.toString();
			if (text.includes('\n')) resolve(`:${text.trim()}`);
		});
		xvfb.once('exit', code => reject(new Error(`Xvfb exited (${code}) before it chose a display`)));
	});
	return {process: xvfb, display};
}

async function freePort(): Promise<number> {
	const server = createServer();
	await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve));
	const {port} = server.address() as {port: number};
	await new Promise(resolve => server.close(resolve));
	return port;
}

/** Resolves when `child` and everything that shares its output (the browser it spawned) have exited. */
async function ended(child: ChildProcess): Promise<void> {
	if (child.exitCode !== null || child.signalCode !== null) return;
	await new Promise(resolve => child.once('close', resolve));
}

/** WebKitWebDriver on a free port, its output kept for the error that needs it. */
async function startDriver(display: string): Promise<{process: ChildProcess; url: string; output: () => string}> {
	const port = await freePort();
	const driver = spawn(driverPath, [`--port=${port}`], {env: {...process.env, DISPLAY: display}, stdio: ['ignore', 'pipe', 'pipe']});
	let output = '';
	driver.stdout!.on('data', (chunk: Buffer) => void (output += chunk.toString()));
	driver.stderr!.on('data', (chunk: Buffer) => void (output += chunk.toString()));
	const url = `http://127.0.0.1:${port}`;
	for (let tries = 0; ; tries++) {
		const ready = await fetch(`${url}/status`).then(async response => (await response.json() as {value?: {ready?: boolean}}).value?.ready, () => false);
		if (ready) return {process: driver, url, output: () => output};
		if (driver.exitCode !== null || tries > 100) throw new Error(`WebKitWebDriver did not start: ${output}`);
		await new Promise(resolve => setTimeout(resolve, 50));
	}
}

/**
 * Runs `fn(arg)` in the page as WebDriver's async script: its result, or its error as data
 * (an error thrown in an async script would come back as a timeout).
 */
function asyncScript(fn: (arg: never) => unknown): string {
	return `const arg = arguments[0], done = arguments[arguments.length - 1];
Promise.resolve().then(() => (${fn.toString()})(arg)).then(
	value => done({value}),
	error => done({error: String(error && error.stack || error)}),
);`;
}

/** WebKitGTK driven by WebKitWebDriver (W3C WebDriver, through selenium-webdriver) under Xvfb. */
export const webkit: Engine = {
	name: 'WebKitGTK',
	async missing() {
		return await unlessExecutable(driverPath, `no WebKitGTK WebDriver at ${driverPath} (apt-get install webkit2gtk-driver)`)
			?? await unlessExecutable(xvfbPath, `no Xvfb at ${xvfbPath} (apt-get install xvfb)`)
			?? await promisify(execFile)(browserPath, ['--version']).then(() => undefined, () => `no WebKitGTK for Python 3 at /usr/bin/python3 (apt-get install python3-gi gir1.2-webkit2-4.1)`);
	},
	async version() {
		const {stdout} = await promisify(execFile)(browserPath, ['--version']);
		return stdout.trim();
	},
	// WebKitWebDriver drives one session, of one browser with one storage: a new one each time.
	fresh: async () => webkit.launch(),
	dispose: async () => undefined,
	async launch({profile, blockSiteData}: LaunchOptions = {}): Promise<Browser> {
		const own = profile ? undefined : await mkdtemp(join(tmpdir(), 'sendonce-webkit-'));
		const xvfb = await startXvfb();
		const driver = await startDriver(xvfb.display).catch(async (error: unknown) => {
			xvfb.process.kill();
			throw error;
		});
		const session = WebDriver.createSession(new Executor(new HttpClient(driver.url)), new Capabilities({
			'webkitgtk:browserOptions': {binary: browserPath, args: ['--automation', `--data-dir=${profile ?? own!}`, ...(blockSiteData ? ['--block-site-data'] : [])]},
		}));
		await session.getSession().catch((error: Error) => {
			driver.process.kill();
			xvfb.process.kill();
			throw new Error(`${error.message}\n${driver.output()}`);
		});
		await session.manage().setTimeouts({script: 30_000});
		// One session drives every tab, one at a time: each command first selects its tab.
		let queue: Promise<unknown> = Promise.resolve();
		let current = await session.getWindowHandle();
		let blank: string | undefined = current;
		const inTab = async <T>(handle: string, command: () => Promise<T>): Promise<T> => {
			const run = queue.then(async () => {
				if (current !== handle) await session.switchTo().window(handle);
				current = handle;
				return command();
			});
			queue = run.catch(() => undefined);
			return run;
		};

		const tab = (handle: string): Tab => ({
			async evaluate(fn, arg) {
				const result = await inTab(handle, async () => session.executeAsyncScript<{value?: unknown; error?: string}>(asyncScript(fn as never), arg));
				if (result.error !== undefined) throw new Error(`in the page: ${result.error}`);
				return result.value as never;
			},
			goto: async url => inTab(handle, async () => session.get(url)),
			reload: async () => inTab(handle, async () => session.navigate().refresh()),
			close: async () => inTab(handle, async () => {
				await session.close();
				const [other] = await session.getAllWindowHandles();
				if (other) await session.switchTo().window(other);
				current = other ?? '';
			}),
		});

		return {
			async open(url) {
				const handle = await inTab(current, async () => {
					// The session's first window serves as the first tab.
					if (blank === undefined) await session.switchTo().newWindow('tab');
					blank = undefined;
					current = await session.getWindowHandle();
					if (url) await session.get(url);
					return current;
				});
				return tab(handle);
			},
			async close() {
				await queue;
				await session.quit().catch(() => undefined);
				driver.process.kill();
				await ended(driver.process);
				xvfb.process.kill();
				await ended(xvfb.process);
				if (own) await rm(own, {recursive: true, force: true});
			},
		};
	},
};
