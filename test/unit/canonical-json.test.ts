import fc from 'fast-check';
import {describe, expect, test} from 'vitest';
import {canonicalJson} from '../../src/core/serialize.js';
import {canonicalJsonText} from '../../src/server/canonical-json.js';

describe('canonicalJsonText: JSON text in canonical form, numbers as written', () => {
	test('sorts members by name and drops whitespace', () => {
		expect(canonicalJsonText(' { "b" : [1, {"y": 2, "x": 1}], "a": 1 } ')).toBe('{"a":1,"b":[1,{"x":1,"y":2}]}');
	});

	test('keeps numbers one JavaScript number cannot tell apart, and repeated names, apart', () => {
		expect(canonicalJsonText('{"id": 12345678901234567891}')).not.toBe(canonicalJsonText('{"id": 12345678901234567890}'));
		expect(canonicalJsonText('{"amount": 0.30000000000000001}')).not.toBe(canonicalJsonText('{"amount": 0.3}'));
		expect(canonicalJsonText('{"to": "alice", "to": "mallory"}')).toBe('{"to":"alice","to":"mallory"}');
	});

	test('writes string escapes one way', () => {
		expect(canonicalJsonText('["\\u0061\\/", "é"]')).toBe(canonicalJsonText('["a/", "\\u00e9"]'));
	});

	test('is undefined past 512 levels of nesting, whatever the stack could take', () => {
		expect(canonicalJsonText(`${'['.repeat(512)}${']'.repeat(512)}`)).toBe(`${'['.repeat(512)}${']'.repeat(512)}`);
		expect(canonicalJsonText(`${'['.repeat(513)}${']'.repeat(513)}`)).toBeUndefined();
		expect(canonicalJsonText(`${'{"a":'.repeat(6000)}1${'}'.repeat(6000)}`)).toBeUndefined();
	});

	test('is undefined for what is not JSON', () => {
		for (const text of ['', '{', '{"a":}', '[1,]', '01', '"\u0001"', '{"a":1} x', 'NaN', '{a:1}']) expect(canonicalJsonText(text), text).toBeUndefined();
	});

	test('is what sendonce\'s client writes (canonicalJson) for any JSON value, however it is spaced', () => {
		fc.assert(fc.property(fc.jsonValue(), fc.constantFrom(undefined, 1, 2, '\t'), (value, indent) => {
			expect(canonicalJsonText(JSON.stringify(value, null, indent))).toBe(canonicalJson(value));
		}), {numRuns: 300});
	});
});
