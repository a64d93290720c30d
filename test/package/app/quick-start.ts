// README.md, "Quick start".
import {createClient} from 'sendonce';

const client = createClient({
	// Secrets come from here at every attempt and are never stored.
	headers: () => ({authorization: `Bearer ${getToken()}`}),
});

// On start-up: finish what a reload or crash interrupted (same keys).
await client.resume();

export async function onSubmit(form: {name: string; email: string; message: string}) {
	// Same scope + same body = the same intent and the same key, even after a double click.
	const intent = await client.intent('contact-form', {url: '/api/contact', json: form});
	const result = await intent.send();

	switch (result.status) {
		case 'succeeded': return show('Sent!');
		case 'failed': return show(`Not sent: ${JSON.stringify(result.data)}`); // 4xx: nothing happened
		case 'unresolved': // retries ran out; the server may have done it
		case 'expired': return show('Your message may have been sent. Retry?');
	}
}
