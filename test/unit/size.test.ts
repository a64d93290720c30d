import {beforeAll, describe, expect, test} from 'vitest';
import {BUDGETS, formatSizes, kib, measureSizes, type SizeReport} from '../../bench/size.js';

// The same measurement as `npm run size` (esbuild, gzip -9): sizes are exact, so they may be
// tested; timings never are.
let report: SizeReport;
beforeAll(async () => {
	report = await measureSizes();
}, 60_000);

const shown = () => `\n\n${formatSizes(report)}\n`;

describe('size budgets, minified and gzipped with dependencies included', () => {
	test(`sendonce, all in, costs at most ${kib(BUDGETS.core)}`, () => {
		expect(report.core, `sendonce measures ${report.core} B:${shown()}`).toBeLessThanOrEqual(BUDGETS.core);
	});

	test(`a contact form (createClient with IndexedDB, one intent sent), built for production, costs at most ${kib(BUDGETS.contactForm)}`, () => {
		expect(report.contactForm.production, `the contact form measures ${report.contactForm.production} B:${shown()}`).toBeLessThanOrEqual(BUDGETS.contactForm);
	});

	test(`memoryStore alone costs at most ${kib(BUDGETS.memoryStore)}`, () => {
		expect(report.memoryStore, shown()).toBeLessThanOrEqual(BUDGETS.memoryStore);
	});

	test.each(['react', 'vue', 'react-native', 'fetch', 'ky', 'axios', 'tanstack-query'] as const)('sendonce/%s stays within its budget on top of the core', name => {
		const entry = report.onTop.find(measured => measured.name === name);
		expect(entry, `sendonce/${name} was not measured`).toBeDefined();
		expect(entry!.onTop, `sendonce/${name} adds ${entry!.onTop} B:${shown()}`).toBeLessThanOrEqual(BUDGETS[name]);
	});

	test('an app with a memory store and its own fetch does not load the browser stores before its first intent', () => {
		expect(report.initial.memoryApp, shown()).toBeLessThan(report.core - report.idbKeyval);
		expect(report.initial.autoApp, shown()).toBeLessThan(report.core);
	});

	test('a page that opts in to sendonce/sw pays for backgroundSync alone, under 0.5 KiB', () => {
		expect(report.sw, 'sendonce/sw was not measured').toBeDefined();
		expect(report.sw!.page, shown()).toBeLessThanOrEqual(512);
	});

	test('idb-keyval is the only package bundled into the core: no ky, no zod', () => {
		expect(report.dependencies).toEqual(['idb-keyval']);
		expect(report.idbKeyval).toBeGreaterThan(0);
	});
});
