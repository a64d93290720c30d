/*
 * Compiles the docs' code blocks with the TypeScript compiler API, all in one Program: each
 * block is a module of its own (so blocks never see each other's names), resolved with the
 * repository's tsconfig.json, whose `paths` map `sendonce` to src/index.ts and `sendonce/*` to
 * src/*.ts. A block's free names come from the shared ambient file (docs/globals.d.ts) and from
 * `declare` comments in the Markdown (see markdown.ts and CONTRIBUTING.md).
 */
import {join} from 'node:path';
import ts from 'typescript';
import type {CodeBlock} from './markdown.js';

/** A compiler error, at its place in the Markdown. */
export interface BlockError {
	file: string;
	line: number;
	message: string;
}

/**
 * `text` with `declare` put before every statement that needs it, so that a comment may say
 * `const form: {message: string}` or `function show(text: string): void` as in a `.d.ts`.
 */
function ambient(text: string): string {
	const source = ts.createSourceFile('declarations.ts', text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
	let result = '';
	let last = 0;
	for (const statement of source.statements) {
		const declarable = ts.isVariableStatement(statement) || ts.isFunctionDeclaration(statement) || ts.isClassDeclaration(statement)
			|| ts.isEnumDeclaration(statement) || ts.isModuleDeclaration(statement);
		const declared = ts.canHaveModifiers(statement) && ts.getModifiers(statement)?.some(modifier => modifier.kind === ts.SyntaxKind.DeclareKeyword);
		const start = statement.getStart(source);
		result += text.slice(last, start) + (declarable && !declared ? 'declare ' : '');
		last = start;
	}

	return result + text.slice(last);
}

/** Where each line of a generated module comes from in the Markdown. */
interface Generated {
	block: CodeBlock;
	text: string;
	/** The Markdown line of each generated line (0-based index). */
	lines: number[];
}

function generate(block: CodeBlock): Generated {
	const parts: string[] = [];
	const lines: number[] = [];
	for (const declaration of block.declarations) {
		const text = ambient(declaration.text);
		parts.push(text);
		text.split('\n').forEach((_, index) => lines.push(declaration.line + index));
	}

	parts.push(block.code);
	block.code.split('\n').forEach((_, index) => lines.push(block.line + index));
	// Every block is a module, whether or not it imports anything: top-level names stay its own.
	parts.push('export {};');
	lines.push(block.line + block.code.split('\n').length - 1);
	return {block, text: parts.join('\n'), lines};
}

/**
 * Every compiler error in `blocks`. `ambientFiles` (relative to `root`, as the blocks' `file`s
 * are) are `.d.ts` files every block sees: docs/globals.d.ts. Errors in the sources themselves
 * are `tsc`'s to report.
 */
export function compileCodeBlocks(blocks: CodeBlock[], {root, ambientFiles}: {root: string; ambientFiles: string[]}): BlockError[] {
	const configPath = join(root, 'tsconfig.json');
	const config = ts.readConfigFile(configPath, ts.sys.readFile);
	if (config.error) throw new Error(ts.flattenDiagnosticMessageText(config.error.messageText, '\n'));
	const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, root, undefined, configPath);
	// A snippet may leave a name unused: it shows one call, not a whole program.
	const options: ts.CompilerOptions = {...parsed.options, noEmit: true, noUnusedLocals: false, noUnusedParameters: false};

	// Beside its Markdown file, so that node_modules and `paths` resolve as for any file here.
	const generated = new Map<string, Generated>();
	for (const block of blocks) {
		const name = join(root, `${block.file}.${block.line}.${block.lang === 'tsx' ? 'tsx' : 'ts'}`);
		generated.set(name, generate(block));
	}

	const host = ts.createCompilerHost(options, true);
	const {getSourceFile, fileExists, readFile} = host;
	host.getSourceFile = (fileName, languageVersion, ...rest) => {
		const module = generated.get(fileName);
		return module ? ts.createSourceFile(fileName, module.text, languageVersion, true) : getSourceFile.call(host, fileName, languageVersion, ...rest);
	};

	host.fileExists = fileName => generated.has(fileName) || fileExists.call(host, fileName);
	host.readFile = fileName => generated.get(fileName)?.text ?? readFile.call(host, fileName);

	const program = ts.createProgram({rootNames: [...generated.keys(), ...ambientFiles.map(file => join(root, file))], options, host});
	const errors: BlockError[] = [];
	const message = (diagnostic: ts.Diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
	for (const diagnostic of [...program.getOptionsDiagnostics(), ...program.getGlobalDiagnostics()]) {
		errors.push({file: 'tsconfig.json', line: 0, message: message(diagnostic)});
	}

	for (const file of ambientFiles) {
		const source = program.getSourceFile(join(root, file));
		for (const diagnostic of source ? [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)] : []) {
			const line = diagnostic.start === undefined ? 0 : source!.getLineAndCharacterOfPosition(diagnostic.start).line + 1;
			errors.push({file, line, message: message(diagnostic)});
		}
	}

	for (const [name, {block, lines}] of generated) {
		const source = program.getSourceFile(name)!;
		for (const diagnostic of [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)]) {
			const at = diagnostic.start === undefined ? 0 : source.getLineAndCharacterOfPosition(diagnostic.start).line;
			errors.push({file: block.file, line: lines[at] ?? block.line, message: message(diagnostic)});
		}
	}

	return errors;
}

/** `file:line: message`, one per error: what a test failure prints. */
export function formatErrors(errors: BlockError[]): string[] {
	return errors.map(({file, line, message}) => `${file}:${line}: ${message}`);
}
