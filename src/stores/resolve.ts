import {StoreError} from '../errors/store-error.js';
import type {SendOnceEvent, StoreOption, IntentStore} from '../types.js';
import {memoryStore} from './memory.js';

/** Turns the `store` option into a working store. */
export async function resolveStore(option: StoreOption, _emit: (event: SendOnceEvent) => void): Promise<IntentStore> {
	if (typeof option === 'object') return option;
	if (option === 'memory' || option === 'auto') return memoryStore();
	throw new StoreError('STORE_UNAVAILABLE', `The '${option}' store is not available in this environment`);
}
