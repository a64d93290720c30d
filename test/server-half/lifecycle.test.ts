// The lifecycle matrix (lifecycle-matrix.ts), a seeded pairwise sample of it: every adapter,
// store, answer and hang-up phase, and every pair of two of them, in at least one cell. The seed
// is printed; LIFECYCLE_SEED=<seed> runs that sample again. `npm run test:lifecycle` runs every cell.
import {randomInt} from 'node:crypto';
import {afterAll, beforeAll, describe, expect, inject, test} from 'vitest';
import {cellName, openMatrix, sampleCells, type Matrix, type StoreName} from './lifecycle-matrix.js';

const seed = process.env.LIFECYCLE_SEED === undefined ? randomInt(2 ** 31) : Number(process.env.LIFECYCLE_SEED);
if (!Number.isSafeInteger(seed)) throw new TypeError(`Expected LIFECYCLE_SEED to be an integer, got ${JSON.stringify(process.env.LIFECYCLE_SEED)}`);
const cells = sampleCells(seed);
console.log(`lifecycle matrix: seed ${seed}, ${cells.length} cells (LIFECYCLE_SEED=${seed} runs this sample again)`);

const services = {redisUrl: inject('redisUrl'), databaseUrl: inject('databaseUrl')};
const missing = (store: StoreName) => (store === 'memory' ? false : store === 'redis' ? services.redisUrl === null : services.databaseUrl === null);

describe(`the lifecycle matrix, seed ${seed}`, () => {
	let matrix: Matrix;
	beforeAll(async () => {
		matrix = await openMatrix(services);
	});
	afterAll(async () => matrix?.close());

	// One after another: a cell counts the process's timers before and after it.
	for (const cell of cells) {
		test.skipIf(missing(cell.store))(cellName(cell), async () => {
			const {failures, observations} = await matrix.run(cell);
			expect(failures, `${cellName(cell)} (seed ${seed}): ${JSON.stringify(observations)}`).toEqual([]);
		});
	}
});
