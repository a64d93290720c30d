import {useEffect, useState, type FormEvent} from 'react';
import type {IntentRequest} from 'sendonce';
import {messages, useIntent} from 'sendonce/react';

interface Draft {
	name: string;
	email: string;
	message: string;
}

const EMPTY: Draft = {name: '', email: '', message: ''};
const DRAFT_KEY = 'sendonce-demo:draft';

/** The form's text, kept in sessionStorage so that a reload mid-send still shows it. */
function useDraft(): [Draft, (draft: Draft) => void] {
	const [draft, setDraft] = useState<Draft>(() => {
		try {
			return {...EMPTY, ...JSON.parse(sessionStorage.getItem(DRAFT_KEY) ?? '{}') as Partial<Draft>};
		} catch {
			return EMPTY;
		}
	});
	return [draft, next => {
		setDraft(next);
		sessionStorage.setItem(DRAFT_KEY, JSON.stringify(next));
	}];
}

const short = (key: string | undefined) => (key ? `${key.slice(0, 8)}…` : '');

export function ContactForm({onChange}: {onChange: () => void}) {
	const [draft, setDraft] = useDraft();
	const {state, attempts, key, result, mayHaveBeenSent, conflict, error, send, retry, discard} = useIntent('contact-form');
	const busy = state === 'pending' || state === 'sending';
	const undecided = state === 'unresolved' || state === 'expired';
	const request: IntentRequest = {url: '/api/contact', json: draft};

	// Each attempt and outcome changes what the server saw: refresh its counters.
	useEffect(onChange, [state, attempts, onChange]);

	const submit = (event: FormEvent) => {
		event.preventDefault();
		void send(request);
	};

	const field = (name: keyof Draft) => ({
		name,
		value: draft[name],
		onChange: (event: {target: {value: string}}) => setDraft({...draft, [name]: event.target.value}),
	});

	const startOver = () => {
		setDraft(EMPTY);
		void discard();
	};

	return (
		<form className="card" aria-labelledby="form-title" data-testid="contact-form" noValidate onSubmit={submit}>
			<h1 id="form-title">Contact us</h1>
			<fieldset disabled={busy}>
				<label htmlFor="contact-name">Name</label>
				<input id="contact-name" autoComplete="name" {...field('name')} />
				<label htmlFor="contact-email">Email</label>
				<input id="contact-email" type="email" autoComplete="email" {...field('email')} />
				<label htmlFor="contact-message">Message</label>
				<textarea id="contact-message" rows={5} {...field('message')} />
			</fieldset>

			{/* Once sent, a second press would be a second message: "Write another message" first. */}
			{!undecided && state !== 'succeeded' && (
				<button type="submit" className="primary" data-testid="send" disabled={busy} aria-busy={busy}>
					{busy ? messages.attempt(attempts) : messages.send}
				</button>
			)}

			<div role="status" aria-live="polite" data-testid="outcome" data-state={state} data-key={key ?? ''}>
				{busy && (
					<p className="note sending">
						{messages.attempt(attempts)} <span className="key">key {short(key)}</span>
					</p>
				)}

				{state === 'succeeded' && (
					<div className="note sent">
						<p><strong>{messages.sent}</strong></p>
						{result?.status === 'succeeded' && result.replayed && <p data-testid="replayed">{messages.replayed}</p>}
						<p className="key">
							key {short(key)}, {attempts} {attempts === 1 ? 'attempt' : 'attempts'}
						</p>
						<button type="button" onClick={startOver}>Write another message</button>
					</div>
				)}

				{state === 'failed' && (
					<p className="note refused" data-testid="refused">
						{messages.refused((result?.status === 'failed' ? (result.data as {reason?: string} | undefined)?.reason : undefined))}
					</p>
				)}

				{undecided && !conflict && (
					<div className="note unsure" role="alert">
						<p><strong>{mayHaveBeenSent ? messages.mayHaveBeenSent : 'Your message was not sent.'}</strong></p>
						<p>{state === 'expired' ? messages.expired : messages.retryHint}</p>
						<p className="key">
							key {short(key)}, {attempts} {attempts === 1 ? 'attempt' : 'attempts'} so far
						</p>
						<div className="actions">
							{state === 'unresolved' && (
								<button type="button" className="primary" data-testid="retry" onClick={() => void retry()}>
									{messages.retry}
								</button>
							)}
							<button type="button" data-testid="send-as-new" onClick={() => void send(request, {replace: true})}>
								{messages.sendAsNew}
							</button>
							{state === 'expired' && <button type="button" onClick={() => void discard()}>Dismiss</button>}
						</div>
					</div>
				)}

				{conflict && (
					<div className="note unsure" role="alert" data-testid="conflict">
						<p><strong>{messages.conflict}</strong></p>
						<div className="actions">
							<button type="button" className="primary" data-testid="retry" onClick={() => void retry()}>
								Retry the earlier message
							</button>
							<button type="button" data-testid="send-as-new" onClick={() => void send(conflict.request, {replace: true})}>
								Send this text as a new message
							</button>
						</div>
					</div>
				)}

				{error !== undefined && (
					<p className="note refused" data-testid="error">This page could not send: {String(error)}</p>
				)}
			</div>
		</form>
	);
}
