import {existsSync, readFileSync} from 'node:fs';
import {fileURLToPath} from 'node:url';
import {describe, expect, test} from 'vitest';
import config from '../../vitest.config.js';

/*
 * What CONTRIBUTING.md and the README say about the test run, held to the run itself: the
 * projects they name are vitest.config.ts's, and a measured figure says when it was measured,
 * since test counts and timings change with every issue.
 */

const root = fileURLToPath(new URL('../..', import.meta.url));
const read = (path: string) => readFileSync(`${root}/${path}`, 'utf8');
const contributing = read('CONTRIBUTING.md');
const readme = read('README.md');
const projects = (config.test!.projects as Array<{test: {name: string}}>).map(project => project.test.name);

const NUMBERS = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve'];

/** The text of `markdown`'s section under `heading`, up to the next heading of its level or above. */
function section(markdown: string, heading: string): string {
	const start = markdown.indexOf(`\n${heading}\n`);
	expect(start, heading).toBeGreaterThan(-1);
	const level = /^#+/.exec(heading)![0];
	const end = markdown.slice(start + heading.length + 2).search(new RegExp(`^#{1,${level.length}} `, 'm'));
	return markdown.slice(start, end === -1 ? undefined : start + heading.length + 2 + end);
}

/** Paragraphs and list items, each on one line. */
function blocks(markdown: string): string[] {
	return markdown.split(/\n\s*\n|\n(?=- )/).map(block => block.replaceAll(/\s+/g, ' ').trim());
}

describe('CONTRIBUTING.md and the README on the test run', () => {
	const tests = section(contributing, '## Tests');

	test('the list of projects under "Tests" names each of vitest.config.ts\'s, once', () => {
		const listed = [...tests.matchAll(/^- ((?:\*\*[\w-]+\*\*(?:, )?)+)(?: \([^)]*\))?:/gm)].flatMap(([, names]) => [...names!.matchAll(/\*\*([\w-]+)\*\*/g)].map(([, name]) => name));
		expect([...listed].sort()).toEqual([...projects].sort());
	});

	test('"One project alone" offers each project', () => {
		const sentence = /One project alone: `npx vitest run --project (\w+)` \(or ([^)]+)\)/.exec(tests.replaceAll(/\s+/g, ' '));
		expect(sentence).not.toBeNull();
		const offered = [sentence![1], ...[...sentence![2]!.matchAll(/`([\w-]+)`/g)].map(([, name]) => name)];
		expect([...offered].sort()).toEqual([...projects].sort());
	});

	test.each([['CONTRIBUTING.md', contributing], ['README.md', readme]])('%s counts the projects right where it counts them', (_, markdown) => {
		const counts = [...markdown.replaceAll(/\s+/g, ' ').matchAll(/Vitest's (\w+) projects/g)].map(([, count]) => count);
		expect(counts.length).toBeGreaterThan(0);
		for (const count of counts) expect(count).toBe(NUMBERS[projects.length]);
	});

	test('npm run test:quick runs existing projects and files, and none that drives a browser', () => {
		const {scripts} = JSON.parse(read('package.json')) as {scripts: Record<string, string>};
		const args = scripts['test:quick']!.split(' ');
		expect(args.slice(0, 2)).toEqual(['vitest', 'run']);
		const chosen = args.flatMap((arg, index) => (args[index - 1] === '--project' ? [arg] : []));
		expect(chosen.length).toBeGreaterThan(0);
		for (const name of chosen) expect(projects).toContain(name);
		expect(chosen).not.toContain('browser');
		expect(chosen).not.toContain('engines');
		const filters = args.slice(2).filter((arg, index) => arg !== '--project' && args[index + 1] !== '--project' && !arg.startsWith('-'));
		for (const filter of filters) expect(existsSync(`${root}/${filter}`) || existsSync(`${root}/${filter}.test.ts`), filter).toBe(true);
	});

	test.each([['CONTRIBUTING.md', contributing], ['README.md', readme]])('in %s, every count of tests and every measured time of a run says when it was measured', (_, markdown) => {
		const figures = /\b\d[\d,]* tests\b|\b\d+ min \d+ s\b|\b\d+–\d+ s\b/;
		const date = /\b\d{1,2} (?:January|February|March|April|May|June|July|August|September|October|November|December) \d{4}\b/;
		const undated = blocks(markdown).filter(block => figures.test(block) && !(/\bmeasured\b/i.test(block) && date.test(block)));
		expect(undated).toEqual([]);
	});
});
