// README.md, "Quick start", with React.
import {messages, useIntent} from 'sendonce/react';

export function SendButton({message}: {message: string}) {
	const {state, attempts, send, retry} = useIntent('contact-form');
	const busy = state === 'pending' || state === 'sending';

	if (state === 'succeeded') return <p>{messages.sent}</p>;
	if (state === 'unresolved' || state === 'expired') {
		return (
			<p role="alert">
				{messages.mayHaveBeenSent}
				{state === 'unresolved' && <button onClick={() => void retry()}>{messages.retry}</button>}
			</p>
		);
	}

	return (
		<button disabled={busy} onClick={() => void send({url: '/api/contact', json: {message}})}>
			{busy ? messages.attempt(attempts) : messages.send}
		</button>
	);
}
