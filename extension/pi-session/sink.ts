// The one way the extension writes text out: every notice, status line,
// widget, log line and tool error goes through this module, whatever made
// the text (a config file, a session entry, an engine's answer, an error).
// visible writes control characters out (\x1b, \u009b: an escape sequence
// cannot retitle the terminal, clear the screen or set the clipboard) and
// replaces lone surrogates with U+FFFD, as Go's clip.Visible does; echo
// also cuts a repeated argument as clip.Echo does. No other module calls
// ctx.ui.notify, setStatus, setWidget or console (sink.test.ts reads the
// sources to check it), and every tool is registered through tool(), so
// its errors are written out the same way.
import type { ExtensionContext, ToolDefinition } from "@earendil-works/pi-coding-agent";
import type { TSchema } from "typebox";

export type Level = "info" | "warning" | "error";

// ECHO_CHARS is how much of an argument a message repeats (clip.EchoChars).
export const ECHO_CHARS = 200;

// isControl is clip.IsControl: C0 controls but tab and newline, DEL, C1.
export function isControl(cp: number): boolean {
	return (cp < 0x20 && cp !== 0x09 && cp !== 0x0a) || (cp >= 0x7f && cp <= 0x9f);
}

// writeOut is how a control character is written: \x1b, and DEL and C1
// as their JSON escapes \u007f, \u009b (clip.Visible).
export function writeOut(cp: number): string {
	return cp < 0x7f ? `\\x${cp.toString(16).padStart(2, "0")}` : `\\u${cp.toString(16).padStart(4, "0")}`;
}

// UNSAFE matches what visible changes: a control character or a lone
// surrogate (what a JavaScript string holds where UTF-8 would be invalid;
// a terminal gets it as U+FFFD anyway, a log or an RPC client not).
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

// visible is s with its control characters but tab and newline written
// out and its lone surrogates replaced by U+FFFD (clip.Visible). Anything
// that is not a string is first made one.
export function visible(s: unknown): string {
	const t = typeof s === "string" ? s : String(s);
	if (!UNSAFE.test(t)) return t;
	let out = "";
	for (const ch of t) {
		const cp = ch.codePointAt(0)!;
		if (cp >= 0xd800 && cp <= 0xdfff) out += "\ufffd";
		else out += isControl(cp) ? writeOut(cp) : ch;
	}
	return out;
}

// echo is clip.Echo: s cut to n characters, then "…(N chars)", written out
// visibly.
export function echo(s: string, n = ECHO_CHARS): string {
	const chars = [...s];
	return visible(chars.length <= n ? s : chars.slice(0, n).join("") + `…(${chars.length} chars)`);
}

// notify tells the user: a notification where pi has a UI, a line on
// stderr (or stdout, for a command's answer) elsewhere (print mode). A
// context of a session that ended is ignored.
export function notify(ctx: ExtensionContext | undefined, text: string, level: Level = "info", elsewhere: "stderr" | "stdout" = "stderr"): void {
	const t = visible(text);
	try {
		if (ctx?.hasUI) return ctx.ui.notify(t, level);
	} catch {
		return; // a context of a session that ended
	}
	if (elsewhere === "stdout") console.log(t);
	else console.error(t);
}

// status sets (or, with undefined, clears) a footer status line.
export function status(ctx: ExtensionContext | undefined, key: string, text: string | undefined): void {
	try {
		if (ctx?.hasUI) ctx.ui.setStatus(key, text === undefined ? undefined : visible(text));
	} catch {
		// a context of a session that ended
	}
}

// widget sets (or, with undefined, clears) lines shown above or below the
// editor.
export function widget(ctx: ExtensionContext | undefined, key: string, lines: string[] | undefined, placement?: "aboveEditor" | "belowEditor"): void {
	try {
		if (ctx?.hasUI) ctx.ui.setWidget(key, lines?.map(visible), placement ? { placement } : undefined);
	} catch {
		// a context of a session that ended
	}
}

// log writes a line for whoever reads pi's stderr.
export function log(text: string): void {
	console.error(visible(text));
}

// toolError is the error a tool throws: the model reads its message, and
// pi shows it.
export function toolError(text: string): Error {
	return new Error(visible(text));
}

// tool is a tool definition whose execute throws only toolErrors: any
// error it throws is written out visibly before pi sees it.
export function tool<P extends TSchema, D = unknown, S = any>(def: ToolDefinition<P, D, S>): ToolDefinition<P, D, S> {
	const execute = def.execute;
	return {
		...def,
		execute: async (...args: Parameters<typeof execute>) => {
			try {
				return await execute.apply(def, args);
			} catch (e) {
				const err = toolError((e as Error)?.message ?? String(e));
				if (e instanceof Error) err.name = e.name;
				throw err;
			}
		},
	};
}
