import {readdirSync, readFileSync} from 'node:fs';
import {join} from 'node:path';
import {fileURLToPath} from 'node:url';
import {beforeAll, describe, expect, test} from 'vitest';
import {checkLinks} from '../docs/check-links.js';
import {compileCodeBlocks, formatErrors, type BlockError} from '../docs/code-blocks.js';
import {anchors, codeBlocks, slug, type CodeBlock} from '../docs/markdown.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const AMBIENT = ['docs/globals.d.ts', 'test/docs/hono.d.ts'];
const README_MAX_LINES = 200;

/** README.md, CONTRIBUTING.md and every Markdown file under docs/, relative to the repository. */
function documents(): string[] {
	const walk = (folder: string): string[] => readdirSync(join(ROOT, folder), {withFileTypes: true}).flatMap(entry => {
		const path = `${folder}/${entry.name}`;
		if (entry.isDirectory()) return walk(path);
		return entry.name.endsWith('.md') ? [path] : [];
	});
	return ['README.md', 'CONTRIBUTING.md', ...walk('docs').sort()];
}

const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');

/**
 * Blocks the checker must refuse or accept, compiled in the same Program as the docs. Each
 * `probe/…` file is Markdown that exists only here.
 */
const PROBES: Record<string, string> = {
	'probe/broken.md': [
		'# A page with mistakes',
		'',
		'```ts',
		'import {createClient} from \'sendonce\';',
		'',
		'createClient({retry: {limit: \'five\'}});',
		'```',
		'',
		'<!-- declare: const draft: {message: string}; function notify(text: string): void -->',
		'',
		'```ts',
		'import {createClient} from \'sendonce\';',
		'',
		'const intent = await createClient().intent(\'contact-form\', {url: \'/api/contact\', json: draft});',
		'notify(intent.key);',
		'```',
		'',
		'A `declare` comment is for the block right after it only:',
		'',
		'```ts',
		'notify(draft.message);',
		'```',
		'',
		'```tsx',
		'import {useIntent} from \'sendonce/react\';',
		'',
		'export const Status = () => <p>{useIntent(\'contact-form\').state === \'sent\' ? \'Sent\' : \'\'}</p>;',
		'```',
		'',
		'```vue',
		'<script setup lang="ts">',
		'import {useIntent} from \'sendonce/vue\';',
		'',
		'const {state} = useIntent(42);',
		'</script>',
		'',
		'<template><p>{{ state }}</p></template>',
		'```',
		'',
		'- In a list item:',
		'',
		'  ```ts',
		'  const fine: number = 1;',
		'  const wrong: string = fine;',
		'  ```',
		'',
		'<!-- declare:',
		'  const fine: string;',
		'  const bad: Nope;',
		'-->',
		'',
		'```ts',
		'export const length = fine.length;',
		'```',
	].join('\n'),
	'probe/page.md': [
		'<!-- declare-page: const draft: {message: string} -->',
		'# Every block of this page knows `draft`',
		'',
		'```ts',
		'export const length: number = draft.message.length;',
		'```',
		'',
		'```ts',
		'export const words: string[] = draft.message.split(\' \');',
		'```',
	].join('\n'),
};

let blocks: CodeBlock[];
let errors: BlockError[];
beforeAll(() => {
	blocks = documents().flatMap(file => codeBlocks(read(file), file));
	const probes = Object.entries(PROBES).flatMap(([file, markdown]) => codeBlocks(markdown, file));
	// One Program for every block, the probes included.
	errors = compileCodeBlocks([...blocks, ...probes], {root: ROOT, ambientFiles: AMBIENT});
}, 120_000);

describe('the docs', () => {
	test(`README.md is at most ${README_MAX_LINES} lines`, () => {
		expect(read('README.md').trimEnd().split('\n').length).toBeLessThanOrEqual(README_MAX_LINES);
	});

	test('every ts, tsx and vue code block compiles against the sources', () => {
		expect(blocks.length, 'the docs hold code blocks').toBeGreaterThan(20);
		for (const file of ['README.md', 'docs/api.md', 'docs/react.md', 'docs/vue.md']) {
			expect(blocks.some(block => block.file === file), `${file} has checked blocks`).toBe(true);
		}

		expect(formatErrors(errors.filter(error => !error.file.startsWith('probe/')))).toEqual([]);
	});

	test('every relative link leads to a file that exists, and every anchor to a heading', () => {
		const broken = documents().flatMap(file => checkLinks(file, {root: ROOT}));
		expect(broken.map(({file, line, target, problem}) => `${file}:${line}: ${target}: ${problem}`)).toEqual([]);
	});
});

describe('the code-block checker', () => {
	const at = (file: string) => formatErrors(errors.filter(error => error.file === file));

	test('fails each broken block, and each broken declaration, at its line in the Markdown', () => {
		expect(at('probe/broken.md')).toEqual([
			expect.stringMatching(/^probe\/broken\.md:6: Type 'string' is not assignable to type 'number'/),
			expect.stringMatching(/^probe\/broken\.md:21: Cannot find name 'notify'/),
			expect.stringMatching(/^probe\/broken\.md:21: Cannot find name 'draft'/),
			expect.stringMatching(/^probe\/broken\.md:27: This comparison appears to be unintentional .* '"sent"'/),
			expect.stringMatching(/^probe\/broken\.md:34: .*'number' is not assignable to parameter of type 'MaybeRefOrGetter<string>'/),
			expect.stringMatching(/^probe\/broken\.md:44: Type 'number' is not assignable to type 'string'/),
			expect.stringMatching(/^probe\/broken\.md:49: Cannot find name 'Nope'/),
		]);
	});

	test('gives every block of a page the names a declare-page comment declares', () => {
		expect(at('probe/page.md')).toEqual([]);
	});

	test('reads a vue block\'s <script setup lang="ts"> only', () => {
		const [vue] = codeBlocks(PROBES['probe/broken.md']!, 'probe/broken.md').filter(block => block.lang === 'vue');
		expect(vue).toMatchObject({line: 32, code: expect.not.stringContaining('template') as unknown});
	});
});

describe('the link checker', () => {
	const page = [
		'# Links',
		'',
		'## The `useIntent(scope, options?)` hook',
		'',
		'[fine](README.md), [a folder](docs), [a heading](#links), [another](#the-useintentscope-options-hook),',
		'[gone](docs/nothing.md), [no heading](README.md#nowhere), [not a page](#nowhere),',
		'![a picture over',
		'two lines](docs/missing.png) and [outside](https://example.com/nothing.md) and `[code](nothing.md)`.',
		'',
		'```md',
		'[in a code block](nothing.md)',
		'```',
	].join('\n');

	test('reports each missing file and anchor with its line, and nothing else', () => {
		const broken = checkLinks('links.md', {root: ROOT, read: file => (file === 'links.md' ? page : read(file))});
		expect(broken.map(({line, target}) => `${line} ${target}`)).toEqual([
			'6 docs/nothing.md',
			'6 README.md#nowhere',
			'6 #nowhere',
			'8 docs/missing.png',
		]);
	});

	test('makes anchors as GitHub does', () => {
		expect(slug('`useIntent(scope, options?)` (Vue)')).toBe('useintentscope-options-vue');
		expect(slug('The server side of the contract')).toBe('the-server-side-of-the-contract');
		expect(slug('Tabs, reloads & coming back online')).toBe('tabs-reloads--coming-back-online');
		expect([...anchors('# A\n\n```\n# not a heading\n```\n\n## A\n')]).toEqual(['a', 'a-1']);
	});
});
