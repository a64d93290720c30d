import {fileURLToPath} from 'node:url';
import {build} from 'esbuild';
import type {TestProject} from 'vitest/node';
import {bundleForBrowser} from '../browser/global-setup.js';

declare module 'vitest' {
	export interface ProvidedContext {
		/** What the engines' site serves, built once per run. */
		engineScripts: {
			/** `sendonce` as one ES module. */
			sendonce: string;
			/** `sendonce/sw` as one ES module, for the page that opts in to the worker. */
			sw: string;
			/** `sendonce/fetch` as one ES module (its own copy of the core: a client of either copy works). */
			fetch: string;
			/** The service worker of the browser tests (test/browser/service-worker.ts), as a classic script. */
			worker: string;
		};
	}
}

const source = (path: string) => fileURLToPath(new URL(path, import.meta.url));

export default async function setup(project: TestProject): Promise<void> {
	const [sendonce, sw, fetch, worker] = await Promise.all([
		bundleForBrowser(source('../../src/index.ts')),
		bundleForBrowser(source('../../src/sw.ts')),
		bundleForBrowser(source('../../src/integrations/fetch.ts')),
		build({entryPoints: [source('../browser/service-worker.ts')], bundle: true, format: 'iife', platform: 'browser', target: 'es2022', write: false, logLevel: 'silent'})
			.then(result => result.outputFiles[0]!.text),
	]);
	project.provide('engineScripts', {sendonce, sw, fetch, worker});
}
