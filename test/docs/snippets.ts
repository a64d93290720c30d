import {readFileSync} from 'node:fs';
import {dirname, join, relative} from 'node:path';
import ts from 'typescript';

/** One fenced ```ts or ```tsx block of a Markdown file. */
export interface Snippet {
	file: string;
	/** The line of the opening fence, 1-based. */
	line: number;
	language: 'ts' | 'tsx';
	code: string;
}

const FENCE = /^```(ts|tsx|typescript)\s*$/;

/** Every ```ts / ```tsx block of `markdown`, in order. */
export function extractSnippets(file: string, markdown: string): Snippet[] {
	const snippets: Snippet[] = [];
	const lines = markdown.split('\n');
	for (let index = 0; index < lines.length; index++) {
		const open = FENCE.exec(lines[index]!.trim());
		if (!open) continue;
		const start = index;
		const body: string[] = [];
		while (++index < lines.length && lines[index]!.trim() !== '```') body.push(lines[index]!);
		snippets.push({file, line: start + 1, language: open[1] === 'tsx' ? 'tsx' : 'ts', code: body.join('\n')});
	}

	return snippets;
}

/**
 * Type-checks each snippet as a module of its own (so that two snippets may declare the same
 * names), with the project's tsconfig: `sendonce/*` resolves to `src/*` through its `paths`.
 * `extra` files (ambient stubs for packages the docs show but the project does not install)
 * join the program. Returns one line per error: `file:line: message`.
 */
export function typeCheckSnippets(root: string, snippets: readonly Snippet[], extra: readonly string[] = []): string[] {
	const configPath = join(root, 'tsconfig.json');
	const config = ts.readConfigFile(configPath, path => ts.sys.readFile(path));
	const {options} = ts.parseJsonConfigFileContent(config.config, ts.sys, root);
	const virtual = new Map<string, Snippet>();
	for (const [index, snippet] of snippets.entries()) {
		// Beside the Markdown file, so that relative imports mean what they mean there.
		virtual.set(join(root, dirname(snippet.file), `__snippet_${index}.${snippet.language}`), snippet);
	}

	const host = ts.createCompilerHost({...options, noEmit: true});
	const {getSourceFile, fileExists, readFile} = host;
	host.fileExists = path => virtual.has(path) || fileExists.call(host, path);
	host.readFile = path => {
		const snippet = virtual.get(path);
		// `export {}` makes every snippet a module, with top-level await and its own scope.
		return snippet ? `${snippet.code}\nexport {};\n` : readFile.call(host, path);
	};

	host.getSourceFile = (path, language, onError, create) => {
		const snippet = virtual.get(path);
		return snippet ? ts.createSourceFile(path, `${snippet.code}\nexport {};\n`, language, true) : getSourceFile.call(host, path, language, onError, create);
	};

	const program = ts.createProgram({rootNames: [...virtual.keys(), ...extra], options: {...options, noEmit: true}, host});
	const errors: string[] = [];
	for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
		const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
		const snippet = diagnostic.file ? virtual.get(diagnostic.file.fileName) : undefined;
		if (snippet && diagnostic.file && diagnostic.start !== undefined) {
			const {line} = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
			// The fence is line `snippet.line`; the snippet's first line is the one after it.
			errors.push(`${snippet.file}:${snippet.line + line + 1}: ${message}`);
		} else {
			errors.push(`${diagnostic.file ? relative(root, diagnostic.file.fileName) : 'tsconfig'}: ${message}`);
		}
	}

	return errors;
}

/** The snippets of each Markdown file, read from `root`. */
export function snippetsOf(root: string, files: readonly string[]): Snippet[] {
	return files.flatMap(file => extractSnippets(file, readFileSync(join(root, file), 'utf8')));
}
