import fc from 'fast-check';
import {describe, expect, test} from 'vitest';
import {canonicalJson} from '../../src/core/serialize.js';
import {bodyBytes, digest, requestFingerprint} from '../../src/server/request-fingerprint.js';
import {canonicalJsonText, isCanonicalJsonBytes, stringifiedIfCanonical} from '../../src/server/canonical-json.js';

const encoder = new TextEncoder();

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
		// A string without escapes is kept as written, but for a lone surrogate, which JSON.stringify escapes.
		expect(canonicalJsonText('["\uD800", "\u2028é"]')).toBe('["\\ud800","\u2028é"]');
	});

	test('is undefined past 512 levels of nesting, whatever the stack could take', () => {
		expect(canonicalJsonText(`${'['.repeat(512)}${']'.repeat(512)}`)).toBe(`${'['.repeat(512)}${']'.repeat(512)}`);
		expect(canonicalJsonText(`${'['.repeat(513)}${']'.repeat(513)}`)).toBeUndefined();
		expect(canonicalJsonText(`${'{"a":'.repeat(6000)}1${'}'.repeat(6000)}`)).toBeUndefined();
	});

	test('nesting, generated: empty and non-empty containers at every depth up to and past the limit, against the slow path', () => {
		/** JSON nested exactly `depth` deep along one spine, with empty and shallow siblings at each level, and spacing. */
		const nested = fc.integer({min: 1, max: 530}).chain(depth => fc.tuple(
			fc.constant(depth),
			fc.array(fc.tuple(fc.boolean(), fc.array(fc.constantFrom('{}', '[]', '[1]', '{"z":{}}', '[[]]', '"s"'), {maxLength: 3}), fc.constantFrom('', ' ', '\n')), {minLength: depth, maxLength: depth}),
		)).map(([depth, levels]) => {
			// levels[0] is the outermost container: level 1.
			let text = '0';
			for (let level = depth - 1; level >= 0; level--) {
				const [object, siblings, gap] = levels[level]!;
				const items = [...siblings, text, ...siblings];
				text = object ? `{${items.map((item, index) => `"${String.fromCharCode(122 - (index % 26))}${index}":${gap}${item}`).join(',')}}` : `[${gap}${items.join(`,${gap}`)}]`;
			}

			const nesting = (item: string) => (item === '{"z":{}}' || item === '[[]]' ? 2 : item === '"s"' ? 0 : 1);
			return {text, deepest: Math.max(depth, ...levels.map(([, siblings], level) => level + 1 + Math.max(0, ...siblings.map(nesting))))};
		});
		fc.assert(fc.property(nested, ({text, deepest}) => {
			const fast = canonicalJsonText(text);
			if (deepest > 512) expect(fast).toBeUndefined();
			else expect(fast).toBe(canonicalJson(JSON.parse(text)));
			// The one-pass check agrees: canonical text holds, a body too deep for it does not.
			expect(isCanonicalJsonBytes(encoder.encode(fast ?? text))).toBe(fast !== undefined);
		}), {numRuns: 300});

		// The order the review found: about 510 lines, each with an empty list, 3 levels deep.
		const order = JSON.stringify({lines: Array.from({length: 510}, (_, index) => ({sku: index, discounts: []}))});
		expect(canonicalJsonText(order)).toBe(canonicalJson(JSON.parse(order)));
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

/** Any JSON value, its members in order or not, with names and strings that need escapes, and the text JSON.stringify writes of it. */
const anyJson = fc.jsonValue({maxDepth: 4}).chain(value => fc.constantFrom(value, JSON.parse(canonicalJson(value)) as unknown));

describe('isCanonicalJsonBytes: bytes fingerprinted as they are', () => {
	test('holds only for bytes canonicalJsonText would write back byte for byte (or that are not JSON, which are fingerprinted by their bytes too)', () => {
		const texts = fc.oneof(
			anyJson.map(value => JSON.stringify(value)),
			anyJson.map(value => JSON.stringify(value, null, 1)),
			anyJson.map(value => canonicalJson(value)),
			fc.string({unit: 'binary'}),
			fc.constantFrom('{"b":1,"a":2}', '{"a":1,"a":2}', '{"\\u0061":1}', '["\\/"]', '["é"]', '["\\u00e9"]', '{"é":1,"z":2}', '{"z":1,"é":2}', '{"\uD83D\uDE00":1,"\uFFFF":2}', '{"\uFFFF":1,"\uD83D\uDE00":2}', '\uFEFF{}', '1.0', '-0', '1e5', '01', '[1,]', 'true ', '"\\u001f"', '"\\u001F"'),
		);
		fc.assert(fc.property(texts, text => {
			const bytes = encoder.encode(text);
			if (!isCanonicalJsonBytes(bytes)) return;
			const canonical = canonicalJsonText(text);
			if (canonical !== undefined) expect(canonical).toBe(text);
		}), {numRuns: 2000});
	});

	test('holds for what sendonce\'s client sends, so that its bodies are hashed in one pass', () => {
		fc.assert(fc.property(fc.jsonValue({maxDepth: 6}), value => {
			expect(isCanonicalJsonBytes(encoder.encode(canonicalJson(value)))).toBe(true);
		}), {numRuns: 500});
		expect(isCanonicalJsonBytes(encoder.encode('{"items":[{"amount":-1.50e+3,"name":"é \\"quoted\\""}],"z":null}'))).toBe(true);
	});

	test('holds for no byte sequence canonicalJsonText would write otherwise: canonical bodies with one byte changed, added or taken out', () => {
		const edited = fc.tuple(fc.jsonValue({maxDepth: 5}), fc.nat(), fc.constantFrom('replace', 'insert', 'delete'), fc.constantFrom(...'{}[],:"\\ 0123456789.eE+-tfnulrsaé\u0001\u001f\uD800'.split(''))).map(([value, at, edit, character]) => {
			const text = canonicalJson(value);
			const index = at % (text.length + 1);
			return edit === 'delete' ? text.slice(0, index) + text.slice(index + 1) : text.slice(0, index) + character + text.slice(edit === 'replace' ? index + 1 : index);
		});
		fc.assert(fc.property(edited, edit => {
			const bytes = encoder.encode(edit);
			if (!isCanonicalJsonBytes(bytes)) return;
			// The text the bytes say (a lone surrogate is encoded as U+FFFD).
			const text = new TextDecoder().decode(bytes);
			expect(canonicalJsonText(text)).toBe(text);
		}), {numRuns: 5000});
	});

	test('nests as deep as canonicalJsonText does, and no deeper', () => {
		for (const [open, close] of [['[', ']'], ['{"a":', '}']] as const) {
			expect(isCanonicalJsonBytes(encoder.encode(`${open.repeat(512)}1${close.repeat(512)}`))).toBe(true);
			expect(isCanonicalJsonBytes(encoder.encode(`${open.repeat(513)}1${close.repeat(513)}`))).toBe(false);
		}

		// After a deep body, a shallow one is read from a clean slate (the per-level state is reused).
		expect(isCanonicalJsonBytes(encoder.encode('{"b":{"z":1},"c":2}'))).toBe(true);
		expect(isCanonicalJsonBytes(encoder.encode('{"b":{"z":1},"a":2}'))).toBe(false);
	});

	test('does not hold for JSON another writer spaced or ordered', () => {
		for (const text of ['{"b":1,"a":2}', '{ "a":1}', '[1, 2]', '{"\\u0061":1}', '["\\/"]', '\uFEFF{}', '{"é":1,"z":2}', '{"\uFFFF":1,"\uD83D\uDE00":2}']) {
			expect(isCanonicalJsonBytes(encoder.encode(text)), text).toBe(false);
		}
	});
});

describe('stringifiedIfCanonical: a parsed body written natively when that is its canonical JSON', () => {
	test('is canonicalJson\'s text whenever it is defined, and defined for members in order', () => {
		fc.assert(fc.property(anyJson, value => {
			const stringified = stringifiedIfCanonical(value);
			if (stringified !== undefined) expect(stringified).toBe(canonicalJson(value));
		}), {numRuns: 1000});
		fc.assert(fc.property(fc.jsonValue({maxDepth: 6}), value => {
			// Integer-like names come first in any object, whatever order they were written in.
			const parsed = JSON.parse(canonicalJson(value)) as unknown;
			if (!/"\d+":/.test(canonicalJson(value))) expect(stringifiedIfCanonical(parsed)).toBe(canonicalJson(value));
		}), {numRuns: 500});
	});

	test('leaves to canonicalJson what JSON.stringify would write otherwise', () => {
		const cases: unknown[] = [{b: 1, a: 2}, {10: 1, 9: 2}, {a: Number.NaN}, [() => 1], {a: 1n}, {a: new Date(0)}, {toJSON: () => 1}, new Map(), {a: Symbol('s')}, [Number.POSITIVE_INFINITY], undefined];
		for (const value of cases) expect(stringifiedIfCanonical(value)).toBeUndefined();
		let deep: unknown = 1;
		for (let depth = 0; depth < 513; depth++) deep = [deep];
		expect(stringifiedIfCanonical(deep)).toBeUndefined();
	});
});

describe('fingerprints: the values keys were stored with before the one-pass paths', () => {
	// Computed by sendonce 0.1.0 as released (commit d400905): a key stored then must still match the same request.
	test('a canonical body\'s bytes, hashed as they are, give the fingerprint they gave through canonicalJsonText', async () => {
		const body = encoder.encode('{"amount":12.50,"currency":"EUR","lines":[{"qty":1,"sku":"a"}],"note":"é \\"x\\""}');
		expect(isCanonicalJsonBytes(body)).toBe(true);
		expect(await requestFingerprint('POST', '/orders?x=1', 'application/json', body)).toBe('5d7055e98d3d74dee06280be329c2250abd6ad0d2d0f7a53a7323dde4ce694ee');
		expect(await requestFingerprint('POST', '/orders', 'application/json', encoder.encode('{ "b" : 1 , "a" : [1, 2] }'))).toBe('98cb9163f72730592d4216215d16c45bc938d9ca4803d4cf575770b0ead652b1');
	});

	test('a parsed body written natively gives the fingerprint canonicalJson gave it', async () => {
		const value = {amount: 12.5, currency: 'EUR', lines: [{qty: 1, sku: 'a'}], note: 'é "x"'};
		expect(stringifiedIfCanonical(value)).toBeDefined();
		expect(await digest('POST', '/orders', bodyBytes('application/json', {value}))).toBe('b775b19d010fd705037bfea27238dce53d7c76393c7a9a88c04574ec8824f912');
		expect(await digest('POST', '/orders', bodyBytes('application/json', {value: {currency: 'EUR', amount: 12.5}}))).toBe('05e191803b2fd7eb835d04c8507a383fecc954ac05889c4743af82172d57c371');
	});
});
