/** Control characters (C0, DEL and C1), which no field takes (the message its line breaks and tabs aside). */
const CONTROL = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]/;
/** An address as a person types it: no display name, no list, nothing a mail header would read apart. */
const EMAIL = /^[^\s@<>()[\]\\,;:"\u0000-\u001F\u007F-\u009F]+@[^\s@<>()[\]\\,;:"\u0000-\u001F\u007F-\u009F]+\.[^\s@<>()[\]\\,;:"\u0000-\u001F\u007F-\u009F]+$/;

/** Why a contact message is refused, or undefined when it can be sent (the demo's both modes). */
export function refusal(body: unknown): string | undefined {
	if (typeof body !== 'object' || body === null) return 'send a JSON object with name, email and message';
	const {name, email, message} = body as Record<string, unknown>;
	if (typeof name !== 'string' || name.trim() === '') return 'please tell us your name';
	if (name.length > 200 || /[\r\n\t]/.test(name) || CONTROL.test(name)) return 'please tell us your name on one line, in at most 200 characters';
	if (typeof email !== 'string' || email.trim().length > 254 || !EMAIL.test(email.trim())) return 'that email address does not look right';
	if (typeof message !== 'string' || message.trim() === '') return 'the message is empty';
	if (message.length > 5000) return 'the message is longer than 5000 characters';
	if (CONTROL.test(message)) return 'the message has characters that cannot be sent';
	return undefined;
}
