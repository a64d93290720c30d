// The types say no where the README says no: were they `any`, these directives would be unused,
// and unused ones are errors.
import {createClient, isSendOnceError} from 'sendonce';
import {useIntent} from 'sendonce/react';

// @ts-expect-error `retry.limit` is a number of attempts.
createClient({retry: {limit: 'five'}});

// @ts-expect-error GET needs no intent.
await createClient().intent('search', {url: '/api/search', method: 'GET'});

export function Form() {
	const {state} = useIntent('contact-form');
	// @ts-expect-error there is no 'sent' state: it is 'succeeded'.
	return state === 'sent';
}

export function code(error: unknown) {
	// @ts-expect-error `code` is a closed union.
	return isSendOnceError(error) && error.code === 'NETWORK';
}
