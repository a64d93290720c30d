/*
 * Set-up of the peer projects: makes Node's `require` load the swapped packages too, for the
 * libraries Vite leaves to Node (react-dom-min's `require('react')` must get react-min).
 */
import Module from 'node:module';
import {inject} from 'vitest';
import {swapsAt} from './project.js';

type Resolve = (request: string, ...rest: unknown[]) => string;
const loader = Module as unknown as {_resolveFilename: Resolve & {sendonceSwaps?: true}};
const original = loader._resolveFilename;

if (!original.sendonceSwaps) {
	const swaps = swapsAt(inject('peerEnd'));
	const resolve: Resolve & {sendonceSwaps?: true} = function (this: unknown, request, ...rest) {
		const swap = swaps.find(([name]) => request === name || request.startsWith(`${name}/`));
		return original.call(this, swap ? swap[1] + request.slice(swap[0].length) : request, ...rest);
	};
	resolve.sendonceSwaps = true;
	loader._resolveFilename = resolve;
}
