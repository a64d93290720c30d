import {fileURLToPath} from 'node:url';
import {build} from 'esbuild';
import type {TestProject} from 'vitest/node';

declare module 'vitest' {
	export interface ProvidedContext {
		/** src/index.ts bundled for the browser as one ES module, built once per run. */
		sendonceBundle: string;
	}
}

/** `entry` bundled for the browser as one ES module, as a page loads it (the bench uses it too). */
export async function bundleForBrowser(entry: string): Promise<string> {
	const result = await build({
		entryPoints: [entry],
		bundle: true,
		format: 'esm',
		platform: 'browser',
		target: 'es2022',
		write: false,
		logLevel: 'silent',
	});
	const [output] = result.outputFiles;
	if (!output) throw new Error(`esbuild produced no output for ${entry}`);
	return output.text;
}

/** Bundles the package once for every browser test file of the run. */
export default async function setup(project: TestProject): Promise<void> {
	project.provide('sendonceBundle', await bundleForBrowser(fileURLToPath(new URL('../../src/index.ts', import.meta.url))));
}
