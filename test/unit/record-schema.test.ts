import {expectTypeOf, test} from 'vitest';
import type * as z from 'zod/mini';
import {intentRecordSchema, type IntentRecord} from '../../src/record-schema.js';

// Checked by `tsc --noEmit` in `npm test`: IntentRecord is written by hand so that the
// published types never import zod, and must stay what the schema lets through.
test('the hand-written record type is exactly what the schema validates', () => {
	expectTypeOf<z.infer<typeof intentRecordSchema>>().toEqualTypeOf<IntentRecord>();
});
