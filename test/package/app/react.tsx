// docs/react.md, "A contact form".
import {useState} from 'react';
import {messages, useIntent} from 'sendonce/react';

export function ContactForm() {
	const [form, setForm] = useState({name: '', email: '', message: ''});
	const {state, attempts, result, conflict, loading, send, retry, discard} = useIntent('contact-form');
	const request = {url: '/api/contact', json: form};
	const busy = state === 'pending' || state === 'sending';
	const unsure = state === 'unresolved' || state === 'expired';

	return (
		<form onSubmit={event => { event.preventDefault(); void send(request); }}>
			{/* Locked while it may have been sent: Retry sends the stored text, which the user should see. */}
			<textarea value={form.message} readOnly={busy || unsure || loading} onChange={event => setForm({...form, message: event.target.value})} />
			{state !== 'succeeded' && !unsure && (
				<button disabled={busy || loading}>{busy ? messages.attempt(attempts) : messages.send}</button>
			)}
			{state === 'succeeded' && (
				<p>{messages.sent} {result?.status === 'succeeded' && result.replayed && messages.replayed}
					<button type="button" onClick={() => void discard()}>Write another</button></p>
			)}
			{result?.status === 'failed' && <p>{messages.refused((result.data as {reason?: string} | undefined)?.reason)}</p>}
			{(unsure || conflict) && (
				<p role="alert">
					{conflict ? messages.conflict : `${messages.mayHaveBeenSent} ${messages.because(result)}`}
					{state === 'unresolved' && <button type="button" onClick={() => void retry()}>{messages.retry}</button>}
					<button type="button" onClick={() => void send(conflict?.request ?? request, {replace: true})}>{messages.sendAsNew}</button>
				</p>
			)}
		</form>
	);
}
