import {DOWN_WHAT, FAULTS, MAIL_FAULTS, RESETS, describeFault, describeMail, describeOutcome, type ChaosAction, type DemoStats} from '../../shared/demo';

export function ChaosPanel({stats, chaos}: {stats: DemoStats | undefined; chaos: (action: ChaosAction) => Promise<void>}) {
	return (
		<aside className="card panel" aria-labelledby="server-title" data-testid="chaos-panel">
			<h2 id="server-title">The server</h2>
			<p className="count">
				<span data-testid="delivered-count">{stats?.delivered ?? '–'}</span>
				<span>{stats?.delivered === 1 ? 'email delivered' : 'emails delivered'}</span>
			</p>
			{stats?.mail && <p className="muted" data-testid="mail">{describeMail(stats.mail)}</p>}
			<p className="muted">
				<span data-testid="requests-count">{stats?.requests ?? '–'}</span> {stats?.requests === 1 ? 'request' : 'requests'} received:
				every attempt, and any request the browser resent by itself after a dropped connection
			</p>

			<h3>Break the network</h3>
			<ul className="chaos">
				{FAULTS.map(({action, label, what}) => (
					<li key={action}>
						<button type="button" data-testid={`chaos-${action}`} onClick={() => void chaos(action)}>{label}</button>
						<span className="muted">{what}</span>
					</li>
				))}
				<li>
					<label className="switch">
						<input
							type="checkbox"
							role="switch"
							data-testid="chaos-down"
							checked={stats?.down ?? false}
							onChange={event => void chaos(event.target.checked ? 'down' : 'up')}
						/>
						Server down
					</label>
					<span className="muted" data-testid="chaos-down-what">{DOWN_WHAT}</span>
				</li>
			</ul>
			{stats?.mail && (
				<>
					<h3>Break the worker or the mail server</h3>
					<ul className="chaos">
						{MAIL_FAULTS.map(({action, label, what}) => (
							<li key={action}>
								<button type="button" data-testid={`chaos-${action}`} onClick={() => void chaos(action)}>{label}</button>
								<span className="muted">{what}</span>
							</li>
						))}
					</ul>
				</>
			)}
			<p className="muted" data-testid="queued">
				{stats?.queued.length ? `Next requests: ${stats.queued.map(describeFault).join(', then ')}` : 'No fault queued.'}
			</p>

			<h3>Last requests</h3>
			{stats?.recent.length ? (
				<ol className="log" data-testid="request-log">
					{stats.recent.map((request, index) => (
						<li key={index} data-key={request.key ?? ''} data-outcome={request.outcome}>
							<code>{request.key ? `${request.key.slice(0, 8)}…` : 'no key'}</code> → {describeOutcome(request)}
						</li>
					))}
				</ol>
			) : <p className="muted">None yet.</p>}

			<h3>Start over</h3>
			<ul className="chaos">
				{RESETS.map(({action, label, what}) => (
					<li key={action}>
						<button type="button" className="link" data-testid={`chaos-${action}`} onClick={() => void chaos(action)}>{label}</button>
						<span className="muted">{what}</span>
					</li>
				))}
			</ul>
		</aside>
	);
}
