import {ChaosPanel} from './ChaosPanel';
import {ContactForm} from './ContactForm';
import {useStats} from './stats';

export function App() {
	const {stats, refresh, chaos} = useStats();
	return (
		<div className="page">
			<header className="intro">
				<p className="brand">sendonce demo</p>
				<p>
					Press <strong>Send</strong>, then break the network with the server's panel{' '}
					<span className="beside">on the right</span><span className="below">below the form</span>. However the
					network misbehaves, each press of Send delivers <strong>one</strong> email, and when the page
					cannot know, it says so instead of sending again.
				</p>
			</header>
			<main className="columns">
				<ContactForm onChange={refresh} />
				<ChaosPanel stats={stats} chaos={chaos} />
			</main>
		</div>
	);
}
