import {access, constants} from 'node:fs/promises';

/*
 * What the engine-neutral scenarios (scenarios.ts) need of a browser, and nothing more: each
 * engine's driver (chromium.ts, firefox.ts, webkit.ts) implements it over its own protocol.
 */

/** One tab. */
export interface Tab {
	/**
	 * Runs `fn(arg)` in the page and resolves to its JSON-able result. `fn` is sent as source
	 * text: it may use only its argument and the page's globals.
	 */
	evaluate<A, R>(fn: (arg: A) => R | Promise<R>, arg: A): Promise<R>;
	/** Loads `url` (absolute) in this tab and waits for it. */
	goto(url: string): Promise<void>;
	/** Reloads the page and waits for it. */
	reload(): Promise<void>;
	/** Closes the tab (as the user does: the page's `pagehide` runs). */
	close(): Promise<void>;
}

/** A running browser with its own storage. */
export interface Browser {
	/** A new tab showing `url`, or `about:blank`. */
	open(url?: string): Promise<Tab>;
	/** Quits the browser; a profile directory it was launched on keeps its data. */
	close(): Promise<void>;
}

export interface LaunchOptions {
	/**
	 * The directory that keeps the browser's data: launch on it again to restart the browser.
	 * Without it, the browser starts with empty storage and forgets it when it closes.
	 */
	profile?: string;
	/** Block every cookie and all site data, with the browser's own setting for it. */
	blockSiteData?: boolean;
}

export interface Engine {
	/** As the test titles show it. */
	readonly name: string;
	/**
	 * Undefined when the engine can run here; else one line: what is missing and how to get it.
	 */
	missing(): Promise<string | undefined>;
	/** The engine's version, read from its binary. */
	version(): Promise<string>;
	/** A browser of its own: a new process, on `options.profile` if given. */
	launch(options?: LaunchOptions): Promise<Browser>;
	/**
	 * A browser with empty storage of its own, cheaper than `launch()` where the engine can
	 * isolate storage inside one process (a browser context): the engine starts that process on
	 * first use and keeps it until `dispose()`.
	 */
	fresh(): Promise<Browser>;
	/** Quits what `fresh()` kept running. */
	dispose(): Promise<void>;
}

/** `fresh()` and `dispose()` over one shared process whose contexts are created by `context`. */
export function sharedProcess<P>(start: () => Promise<P>, context: (process: P) => Promise<Browser>, quit: (process: P) => Promise<void>): Pick<Engine, 'fresh' | 'dispose'> {
	let running: Promise<P> | undefined;
	return {
		async fresh() {
			running ??= start();
			return context(await running);
		},
		async dispose() {
			const process = running;
			running = undefined;
			if (process) await quit(await process);
		},
	};
}

/** Undefined when `path` is an executable file, else `problem`. */
export async function unlessExecutable(path: string, problem: string): Promise<string | undefined> {
	return access(path, constants.X_OK).then(() => undefined, () => problem);
}
