import {useEffect, useState, type FormEvent} from 'react';
import type {IntentRequest} from 'sendonce';
import {messages, useIntent} from 'sendonce/react';
import {canDeliverAfterClose, deliversAfterClose, setDeliversAfterClose} from './delivery';

interface Draft {
	name: string;
	email: string;
	message: string;
}

const EMPTY: Draft = {name: '', email: '', message: ''};
const DRAFT_KEY = 'sendonce-demo:draft';
const SENT_KEY = 'sendonce-demo:sent';

/** A value kept in sessionStorage, so that a reload mid-send still shows it. */
function useStored<T>(name: string, initial: T): [T, (value: T) => void] {
	const [value, setValue] = useState<T>(() => {
		try {
			const stored = sessionStorage.getItem(name);
			return stored === null ? initial : JSON.parse(stored) as T;
		} catch {
			return initial;
		}
	});
	return [value, next => {
		setValue(next);
		if (next === undefined) sessionStorage.removeItem(name);
		else sessionStorage.setItem(name, JSON.stringify(next));
	}];
}

const short = (key: string | undefined) => (key ? `${key.slice(0, 8)}…` : '');
const toRequest = (draft: Draft): IntentRequest => ({url: '/api/contact', json: draft});

export function ContactForm({onChange}: {onChange: () => void}) {
	// `draft` is what the fields edit; `sent` the text of the message that may have been sent.
	const [draft, setDraft] = useStored<Draft>(DRAFT_KEY, EMPTY);
	const [sent, setSent] = useStored<Draft | undefined>(SENT_KEY, undefined);
	const [editing, setEditing] = useState(false);
	const [afterClose, setAfterClose] = useState(deliversAfterClose);
	const {state, attempts, key, result, mayHaveBeenSent, conflict, error, loading, checked, send, retry, discard, check} = useIntent('contact-form');
	const busy = state === 'pending' || state === 'sending';
	const undecided = state === 'unresolved' || state === 'expired';
	// While the message may have been sent, the fields show its text and cannot change it, so
	// that Retry sends what the user sees; Edit unlocks them, and Send then asks what to do.
	const locked = undecided && !editing && !conflict;
	const shown = locked ? sent ?? draft : draft;
	const earlier = sent ?? draft;
	const refused = result?.status === 'unresolved' && result.reason === 'refused';

	// Each attempt and outcome changes what the server saw: refresh its counters.
	useEffect(onChange, [state, attempts, onChange]);
	useEffect(() => {
		if (!undecided) setEditing(false);
	}, [undecided]);

	const submit = (event: FormEvent) => {
		event.preventDefault();
		// While undecided, this text is not sent: the library answers with `conflict` instead.
		if (!undecided) setSent(draft);
		void send(toRequest(draft));
	};

	const field = (name: keyof Draft) => ({
		name,
		value: shown[name],
		onChange: (event: {target: {value: string}}) => setDraft({...draft, [name]: event.target.value}),
	});

	const edit = (next: boolean) => {
		setDraft(earlier);
		setEditing(next);
	};

	const retryEarlier = () => {
		setDraft(earlier);
		void retry();
	};

	const sendAsNew = (text: Draft) => {
		setDraft(text);
		setSent(text);
		void send(toRequest(text), {replace: true});
	};

	const startOver = () => {
		setDraft(EMPTY);
		setSent(undefined);
		void discard();
	};

	const dismiss = () => {
		setDraft(earlier);
		setSent(undefined);
		void discard();
	};

	return (
		<form className="card" aria-labelledby="form-title" data-testid="contact-form" noValidate onSubmit={submit}>
			<h1 id="form-title">Contact us</h1>
			<fieldset disabled={busy || locked || loading || conflict !== undefined}>
				<label htmlFor="contact-name">Name</label>
				<input id="contact-name" autoComplete="name" {...field('name')} />
				<label htmlFor="contact-email">Email</label>
				<input id="contact-email" type="email" autoComplete="email" {...field('email')} />
				<label htmlFor="contact-message">Message</label>
				<textarea id="contact-message" rows={5} {...field('message')} />
			</fieldset>

			{canDeliverAfterClose && (
				<label className="muted option">
					<input
						type="checkbox"
						data-testid="deliver-after-close"
						checked={afterClose}
						onChange={event => {
							setAfterClose(event.target.checked);
							void setDeliversAfterClose(event.target.checked);
						}}
					/>{' '}
					Deliver even if I close the tab
				</label>
			)}

			{locked && (
				<p className="muted lock" data-testid="locked">
					This is the text that may have been sent, so it is locked{state === 'unresolved' && ': Retry sends it as it is'}.{' '}
					<button type="button" className="link" data-testid="edit" onClick={() => edit(true)}>Edit</button>
				</p>
			)}
			{undecided && editing && !conflict && (
				<p className="muted lock" data-testid="editing">
					Send will ask you before it sends this text as a new message.{' '}
					<button type="button" className="link" data-testid="cancel-edit" onClick={() => edit(false)}>Back to the earlier text</button>
				</p>
			)}

			{/* Once sent, a second press would be a second message: "Write another message" first. */}
			{(!undecided || editing) && !conflict && state !== 'succeeded' && state !== 'not-sent' && (
				<button type="submit" className="primary" data-testid="send" disabled={busy || loading} aria-busy={busy}>
					{busy ? messages.attempt(attempts) : messages.send}
				</button>
			)}

			<div role="status" aria-live="polite" data-testid="outcome" data-state={state} data-key={key ?? ''} data-attempts={attempts}>
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
						<p data-testid="because">{state === 'expired' ? messages.expired : messages.because(result)}</p>
						{/* A refusal's explanation says already how to retry. */}
						{state === 'unresolved' && !editing && !refused && <p>{messages.retryHint}</p>}
						<p className="key">
							key {short(key)}, {attempts} {attempts === 1 ? 'attempt' : 'attempts'} so far
						</p>
						{checked !== undefined && checked !== 'checking' && <p data-testid="checked">{messages.checkFound(checked)}</p>}
						{!editing && (
							<div className="actions">
								{state === 'unresolved' && (
									<button type="button" className="primary" data-testid="retry" onClick={() => void retry()}>
										{messages.retry}
									</button>
								)}
								<button type="button" data-testid="check" disabled={checked === 'checking'} onClick={() => void check()}>
									{checked === 'checking' ? messages.checking : messages.check}
								</button>
								<button type="button" data-testid="send-as-new" onClick={() => sendAsNew(earlier)}>
									{messages.sendAsNew}
								</button>
								{state === 'expired' && <button type="button" onClick={dismiss}>Dismiss</button>}
							</div>
						)}
					</div>
				)}

				{state === 'not-sent' && (
					<div className="note refused" role="alert" data-testid="not-sent">
						<p><strong>{messages.notSent}</strong></p>
						<p className="key">key {short(key)}: closed by the server, so a late copy of it does nothing</p>
						<div className="actions">
							<button type="button" className="primary" data-testid="send-now" onClick={() => sendAsNew(earlier)}>{messages.sendNow}</button>
							<button type="button" onClick={startOver}>Write another message</button>
						</div>
					</div>
				)}

				{conflict && (
					<div className="note unsure" role="alert" data-testid="conflict">
						<p><strong>{messages.conflict}</strong></p>
						<div className="actions">
							{/* An expired intent cannot be retried: only a new message is left. */}
							{state === 'unresolved' && (
								<button type="button" className="primary" data-testid="retry" onClick={retryEarlier}>
									Retry the earlier message
								</button>
							)}
							<button type="button" data-testid="send-as-new" onClick={() => sendAsNew(draft)}>
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
