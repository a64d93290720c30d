/*
 * `npm run test:lifecycle` (tsx test/lifecycle/cli.ts): every cell of the lifecycle matrix
 * (test/server-half/lifecycle-matrix.ts), one after another, then a table of cells passed and
 * failed and the time they took per adapter and store, each failing cell with what it saw, and a
 * closing `N passed, N failed` line; exit 1 when a cell failed.
 *
 * --filter=<regular expression>: only the cells whose name (`fastify × redis × stream × answer`) matches.
 * --seed=<integer>: only the pairwise sample of that seed, as lifecycle.test.ts runs it.
 */
import {postgresAnswers, redisAnswers} from '../server-half/services.js';
import {ADAPTERS, allCells, cellName, openMatrix, sampleCells, STORES, type CellResult} from '../server-half/lifecycle-matrix.js';

const option = (name: string) => process.argv.find(item => item.startsWith(`--${name}=`))?.slice(name.length + 3);
const filter = new RegExp(option('filter') ?? '');
const seed = option('seed');
if (seed !== undefined && !Number.isSafeInteger(Number(seed))) throw new TypeError('Expected `--seed` to be an integer');

const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const databaseUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const services = {redisUrl: await redisAnswers(redisUrl) ? redisUrl : null, databaseUrl: await postgresAnswers(databaseUrl) ? databaseUrl : null};
for (const [name, url, found] of [['Redis', redisUrl, services.redisUrl], ['PostgreSQL', databaseUrl, services.databaseUrl]] as const) {
	if (found === null) console.log(`no ${name} at ${url}: its cells are skipped`);
}

const matrix = await openMatrix(services);
const cells = (seed === undefined ? allCells() : sampleCells(Number(seed))).filter(cell => filter.test(cellName(cell)) && matrix.available(cell.store));
console.log(`${cells.length} cells${seed === undefined ? '' : ` (the sample of seed ${seed})`}…`);

const results: CellResult[] = [];
const began = performance.now();
for (const cell of cells) {
	const result = await matrix.run(cell);
	results.push(result);
	if (result.failures.length > 0) console.log(`FAIL ${cellName(cell)}`);
	if (results.length % 50 === 0) console.log(`  ${results.length}/${cells.length} cells, ${Math.round((performance.now() - began) / 1000)} s`);
}

await matrix.close();

/** `passed/total, seconds` of the results `pick` keeps; an empty cell of the table when none. */
function summary(pick: (result: CellResult) => boolean): string {
	const kept = results.filter(result => pick(result));
	if (kept.length === 0) return '';
	const passed = kept.filter(result => result.failures.length === 0).length;
	return `${passed}/${kept.length}, ${(kept.reduce((sum, result) => sum + result.ms, 0) / 1000).toFixed(1)} s`;
}

const rows = [
	['', ...STORES, 'all'],
	...ADAPTERS.filter(adapter => results.some(result => result.cell.adapter === adapter))
		.map(adapter => [adapter, ...STORES.map(store => summary(result => result.cell.adapter === adapter && result.cell.store === store)), summary(result => result.cell.adapter === adapter)]),
	['all', ...STORES.map(store => summary(result => result.cell.store === store)), summary(() => true)],
];
const widths = rows[0]!.map((_, column) => Math.max(...rows.map(row => row[column]!.length)));
console.log('\ncells passed/run, and their time, per adapter and store:\n');
for (const row of rows) console.log(`| ${row.map((text, column) => text.padEnd(widths[column]!)).join(' | ')} |`);

const failed = results.filter(result => result.failures.length > 0);
for (const {cell, failures, observations} of failed) {
	console.log(`\nFAIL ${cellName(cell)}`);
	for (const failure of failures) console.log(`  - ${failure}`);
	console.log(`  saw: ${JSON.stringify(observations)}`);
}

console.log(`\n${results.length - failed.length} passed, ${failed.length} failed (${Math.round((performance.now() - began) / 1000)} s)`);
process.exit(failed.length === 0 ? 0 : 1);
