import {beforeAll, describe, expect, test} from 'vitest';
import {BUDGETS, formatSizes, kib, measureSizes, type SizeReport} from '../../bench/size.js';

// The same measurement as `npm run size` (size-limit, esbuild, gzip -9): sizes are exact, so
// they may be tested; timings never are.
let report: SizeReport;
beforeAll(async () => {
	report = await measureSizes();
}, 60_000);

describe('size budgets, minified and gzipped with dependencies included', () => {
	test(`sendonce costs at most ${kib(BUDGETS.core)}`, () => {
		expect(report.core, `sendonce measures ${report.core} B:\n\n${formatSizes(report)}\n`).toBeLessThanOrEqual(BUDGETS.core);
	});

	test.each(['react', 'vue', 'react-native'] as const)('sendonce/%s stays within its budget on top of the core', name => {
		const binding = report.bindings.find(measured => measured.name === name);
		expect(binding, `sendonce/${name} was not measured`).toBeDefined();
		expect(binding!.onTop, `sendonce/${name} adds ${binding!.onTop} B:\n\n${formatSizes(report)}\n`).toBeLessThanOrEqual(BUDGETS[name]);
	});

	test('the breakdown accounts for the whole bundle: own code and each runtime dependency', () => {
		expect(report.parts.map(part => part.name)).toEqual(['own code (src/)', 'ky', 'idb-keyval', 'zod (zod/mini)']);
		for (const part of report.parts) expect(part.minified).toBeGreaterThan(0);
		const minified = report.parts.reduce((total, part) => total + part.minified, 0);
		expect(minified).toBeLessThanOrEqual(report.coreMinified);
	});
});
