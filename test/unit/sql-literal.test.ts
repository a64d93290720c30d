import {describe, expect, test} from 'vitest';
import {inlineStatement} from '../../src/server/sql-literal.js';

describe('inlineStatement: a claim written with its values, to ride with BEGIN', () => {
	test('writes each $n as a literal: text quoted, numbers as they are', () => {
		expect(inlineStatement('SELECT $1, $2, $10', ['a', 42, 'x', 0, 0, 0, 0, 0, 0, 'ten'])).toBe('SELECT \'a\', 42, \'ten\'');
	});

	test('doubles quotes, and writes backslashes in an E string, as libpq quotes a literal', () => {
		expect(inlineStatement('SELECT $1', ['it\'s'])).toBe('SELECT \'it\'\'s\'');
		expect(inlineStatement('SELECT $1', ['a\\\'); DROP TABLE t; --'])).toBe('SELECT  E\'a\\\\\'\'); DROP TABLE t; --\'');
	});

	test('leaves $n inside quoted strings and identifiers alone', () => {
		expect(inlineStatement('SELECT hashtext(\'t$1\'), "x$2" FROM "s"."t$1" WHERE id = $1', ['k'])).toBe('SELECT hashtext(\'t$1\'), "x$2" FROM "s"."t$1" WHERE id = \'k\'');
	});

	test('refuses what it cannot write safely: a NUL, a value of another type, a missing value', () => {
		expect(inlineStatement('SELECT $1', ['a\0b'])).toBeUndefined();
		expect(inlineStatement('SELECT $1', [new Uint8Array(1)])).toBeUndefined();
		expect(inlineStatement('SELECT $1', [Number.NaN])).toBeUndefined();
		expect(inlineStatement('SELECT $2', ['a'])).toBeUndefined();
	});
});
