import {fileURLToPath} from 'node:url';
import {build} from 'esbuild';
import type {TestProject} from 'vitest/node';

declare module 'vitest' {
	export interface ProvidedContext {
		/** src/index.ts bundled for the browser as one ES module, built once per run. */
		sendonceBundle: string;
	}
}

/** Bundles the package once for every browser test file of the run. */
export default async function setup(project: TestProject): Promise<void> {
	const result = await build({
		entryPoints: [fileURLToPath(new URL('../../src/index.ts', import.meta.url))],
		bundle: true,
		format: 'esm',
		platform: 'browser',
		target: 'es2022',
		write: false,
		logLevel: 'silent',
	});
	const [output] = result.outputFiles;
	if (!output) throw new Error('esbuild produced no output for src/index.ts');
	project.provide('sendonceBundle', output.text);
}
