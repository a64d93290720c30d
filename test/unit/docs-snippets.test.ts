import {readdirSync} from 'node:fs';
import {fileURLToPath} from 'node:url';
import {beforeAll, describe, expect, test} from 'vitest';
import {extractSnippets, snippetsOf, typeCheckSnippets} from '../docs/snippets.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * The Markdown whose ```ts blocks must compile. docs/*.md all do; README.md's blocks are
 * fragments that lean on each other (an `intent` from the block before), so it is not listed
 * yet: add it here once its blocks stand alone.
 */
const CHECKED = readdirSync(`${ROOT}docs`).filter(name => name.endsWith('.md')).map(name => `docs/${name}`);

/** Ambient stubs for packages the docs show and the project does not install. */
const STUBS = [`${ROOT}test/docs/hono.d.ts`];

/** A block that must fail, checked in the same program (one program takes seconds to build). */
const BROKEN = extractSnippets('docs/broken.md', 'Text\n\n```ts\nimport {idempotency} from \'sendonce/server\';\n\nidempotency({ttl: \'1 day\'});\n```\n');

let errors: string[];
beforeAll(() => {
	errors = typeCheckSnippets(ROOT, [...snippetsOf(ROOT, CHECKED), ...BROKEN], STUBS);
}, 120_000);

describe('code in the docs', () => {
	test('every ```ts block of docs/*.md type-checks against the sources', () => {
		expect(snippetsOf(ROOT, ['docs/server.md']).length).toBeGreaterThanOrEqual(10);
		expect(errors.filter(error => !error.startsWith('docs/broken.md'))).toEqual([]);
	});

	test('a block that does not compile is reported with its file and line', () => {
		expect(errors.filter(error => error.startsWith('docs/broken.md'))).toEqual([
			expect.stringMatching(/^docs\/broken\.md:6: Type 'string' is not assignable to type 'number'/),
		]);
	});

	test('only ts and tsx fences are taken, each with the line of its fence', () => {
		const markdown = '```sql\nSELECT 1;\n```\n\n```ts\nconst a = 1;\n```\n\n```tsx\nconst b = <div />;\n```\n';
		expect(extractSnippets('x.md', markdown)).toEqual([
			{file: 'x.md', line: 5, language: 'ts', code: 'const a = 1;'},
			{file: 'x.md', line: 9, language: 'tsx', code: 'const b = <div />;'},
		]);
	});
});
