// examples/outbox/refusal.ts: what the contact route refuses before anything is stored, for every
// control character in every field (the outside attack found NUL a 500 on every retry, and ESC or
// NEL in the address sent to another Reply-To).
import {describe, expect, test} from 'vitest';
import {refusal} from '../../examples/outbox/refusal.js';

const OK = {name: 'Zoë Ω 😀', email: 'ada.b+c@sub.example.co.uk', message: 'Hello,\r\n\tthere.'};
const CONTROLS = [...Array.from({length: 0x20}, (_, code) => code), ...Array.from({length: 0x21}, (_, code) => 0x7F + code)].map(code => String.fromCodePoint(code));

describe('refusal', () => {
	test('a message as a person writes it is taken: letters of any script, line breaks and tabs in the message', () => {
		expect(refusal(OK)).toBeUndefined();
	});

	test.each(['name', 'email'] as const)('every C0, DEL and C1 control character in the %s is refused', field => {
		const taken = CONTROLS.filter(character => refusal({...OK, [field]: `a${character}b${field === 'email' ? '@example.com' : ''}`}) === undefined);
		expect(taken).toEqual([]);
	});

	test('every control character in the message is refused, line breaks and tabs aside', () => {
		const taken = CONTROLS.filter(character => refusal({...OK, message: `a${character}b`}) === undefined);
		expect(taken).toEqual(['\t', '\n', '\r']);
	});

	test.each(['"Boss"<eve@evil.test>', 'eve@evil.test>,<x', 'a@b.c, d@e.f', 'a b@example.com', 'a@example', '@example.com'])('the address %j is refused', email => {
		expect(refusal({...OK, email})).toBe('that email address does not look right');
	});

	test('a name over 200 characters is refused, one of 200 taken', () => {
		expect(refusal({...OK, name: 'x'.repeat(200)})).toBeUndefined();
		expect(refusal({...OK, name: 'x'.repeat(201)})).toMatch(/at most 200 characters/);
	});
});
