/**
 * The Standard Schema interface (https://standardschema.dev), copied as its authors ask, so that
 * any validator implementing it (zod 4, valibot, arktype) can check a response body without
 * sendonce importing one.
 *
 * @example
 * import * as z from 'zod';
 * import type {StandardSchemaV1} from 'sendonce';
 *
 * const order: StandardSchemaV1<unknown, {id: string}> = z.object({id: z.string()});
 */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
	readonly '~standard': {
		readonly version: 1;
		readonly vendor: string;
		readonly validate: (value: unknown) => StandardSchemaV1.Result<Output> | Promise<StandardSchemaV1.Result<Output>>;
		readonly types?: {readonly input: Input; readonly output: Output} | undefined;
	};
}

// eslint-disable-next-line @typescript-eslint/no-namespace
export declare namespace StandardSchemaV1 {
	/** What `validate` gives back. */
	export type Result<Output> = {readonly value: Output; readonly issues?: undefined} | {readonly issues: readonly Issue[]};

	/** One problem a validator found. */
	export interface Issue {
		readonly message: string;
		readonly path?: ReadonlyArray<PropertyKey | {readonly key: PropertyKey}> | undefined;
	}

	/** The value a schema gives back once valid. */
	export type InferOutput<Schema extends StandardSchemaV1> = NonNullable<Schema['~standard']['types']>['output'];
}
