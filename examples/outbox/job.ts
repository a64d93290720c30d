/** The job that emails one message: contact.ts adds it, worker.ts runs it. */
export const SEND_EMAIL = 'send_contact_email';

/** What the job is given: the whole email, made in the request's transaction. */
export interface EmailJob {
	/** Made from the request's key by `ctx.downstreamKey('email')`: the same in every run of the request. */
	messageId: string;
	/** Which stored message this is. */
	messageRow: string;
	to: string;
	replyTo: string;
	subject: string;
	text: string;
}
