import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { test } from "node:test";
import { Arbiter } from "./arbiter.ts";
import { Code, EngineError } from "./client.ts";
import { registerPins } from "./pins.ts";
import { summarizeRun, type SummaryConfig } from "./recap-logic.ts";
import { registerRelay } from "./relay.ts";
import { echo, log, notify, status, tool, toolError, visible, widget } from "./sink.ts";

// The table Go's clip tests read too (clip/testdata/visible.json).
const table = JSON.parse(readFileSync(new URL("../../clip/testdata/visible.json", import.meta.url), "utf8"));

test("visible and echo are clip.Visible and clip.Echo (the shared table)", () => {
	assert.ok(table.visible.length >= 5 && table.echo.length >= 3);
	for (const c of table.visible) assert.equal(visible(c.in), c.out, JSON.stringify(c.in));
	for (const c of table.echo) assert.equal(echo(c.in.repeat(c.repeat ?? 1)), c.out.repeat(c.outRepeat ?? 1) + (c.tail ?? ""), JSON.stringify(c.in));
	assert.equal(visible(42), "42");
	assert.equal(visible(undefined), "undefined");
});

// HOSTILE is what every sink is fed: the escape sequences a terminal obeys
// (title, clear, clipboard, 8-bit CSI, cursor moves) and the lone
// surrogates a string holds where its bytes were not UTF-8.
const HOSTILE = ["title \u001b]0;PWNED\u0007", "clear \u001b[2J\u001b[H", "clip \u001b]52;c;SGk=\u001b\\", "csi \u009b31m", "cr \r over", "lone \ud800 and \udfff", "del \u007f nul \u0000"];

// raw finds what must never reach a terminal: a control character but tab
// and newline, or a lone surrogate.
const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const clean = (where: string, s: unknown) => {
	assert.equal(typeof s, "string", `${where}: ${String(s)}`);
	assert.ok(!RAW.test(s as string), `${where} wrote raw text: ${JSON.stringify(s)}`);
};

// screen is a context whose UI records everything written to it.
function screen(hasUI = true) {
	const out: { sink: string; text: string }[] = [];
	const ui = {
		notify: (text: string) => void out.push({ sink: "notify", text }),
		setStatus: (_key: string, text: string | undefined) => void (text !== undefined && out.push({ sink: "status", text })),
		setWidget: (_key: string, lines: string[] | undefined) => void out.push(...(lines ?? []).map((text) => ({ sink: "widget", text }))),
		setEditorText: () => {},
		getEditorText: () => "",
	};
	return { out, ctx: { hasUI, ui } as any };
}

// captured runs fn with console.error and console.log recorded.
async function captured(fn: () => unknown | Promise<unknown>): Promise<string[]> {
	const lines: string[] = [];
	const { error, log } = console;
	console.error = (...a: unknown[]) => void lines.push(a.join(" "));
	console.log = (...a: unknown[]) => void lines.push(a.join(" "));
	try {
		await fn();
	} finally {
		Object.assign(console, { error, log });
	}
	return lines;
}

test("every sink of sink.ts writes hostile text out visibly", async () => {
	for (const h of HOSTILE) {
		const s = screen();
		notify(s.ctx, h, "warning");
		status(s.ctx, "k", h);
		widget(s.ctx, "k", [h, h]);
		assert.deepEqual(
			s.out.map((o) => o.sink),
			["notify", "status", "widget", "widget"],
		);
		for (const o of s.out) clean(o.sink, o.text);
		const lines = await captured(() => {
			notify(screen(false).ctx, h); // print mode: stderr
			notify(screen(false).ctx, h, "info", "stdout");
			notify(undefined, h);
			log(h);
		});
		assert.equal(lines.length, 4);
		for (const l of lines) clean("console", l);
		clean("toolError", toolError(h).message);
		const t = tool({ name: "t", label: "t", description: "", parameters: {} as any, execute: async () => Promise.reject(new Error(h)) });
		await assert.rejects(t.execute("id", {}, undefined, undefined, {} as any), (e: Error) => (clean("tool error", e.message), true));
	}
	// A context of a session that ended throws; nothing is said then.
	const gone = { hasUI: true, ui: new Proxy({}, { get: () => () => { throw new Error("stale ctx"); } }) } as any;
	notify(gone, "x");
	status(gone, "k", "x");
	widget(gone, "k", ["x"]);
});

// The modules, run on fakes of pi, get hostile text where it comes from
// in real use: an engine's answer, an error, a session entry, a config.
test("the modules write what reaches them through the sinks", async () => {
	for (const h of HOSTILE) {
		// relay: the engine's config warnings, a failed /relay, recall's error.
		const handlers: Record<string, Function[]> = {};
		const commands: Record<string, any> = {};
		const tools: Record<string, any> = {};
		const pi: any = {
			on: (n: string, fn: Function) => void (handlers[n] ??= []).push(fn),
			registerCommand: (n: string, c: any) => void (commands[n] = c),
			registerTool: (t: any) => void (tools[t.name] = t),
			appendEntry: () => {},
			sendUserMessage: () => {},
		};
		const kit: any = {
			arbiter: new Arbiter(),
			hello: () => ({ role: "main", subagent: false, headless: false, mode: "tui" }),
			ask: async (method: string) => (method === "relay.config" ? { result: { config: {}, warnings: [`context-relay.json: ${h}`] } } : { result: {} }),
			call: async () => Promise.reject(new EngineError(Code.Internal, `relay: ${h}`)),
			ready: async () => true,
			say: () => {},
		};
		registerRelay(pi, kit);
		const s = screen();
		const ctx = { ...s.ctx, isIdle: () => true, hasPendingMessages: () => false, getContextUsage: () => ({ tokens: 1 }), sessionManager: { getLeafId: () => "l", getLeafEntry: () => undefined, getBranch: () => [] }, compact: (o: any) => o.onError(new Error(h)) };
		for (const fn of handlers.session_start ?? []) await fn({}, ctx);
		await commands.relay.handler("", ctx);
		assert.ok(s.out.length >= 2, JSON.stringify(s.out));
		for (const o of s.out) clean(`relay ${o.sink}`, o.text);
		await assert.rejects(tools.recall.execute("id", { query: "q" }, undefined, undefined, ctx), (e: Error) => (clean("recall error", e.message), true));

		// pins: an engine's warning on inheriting pins.
		const p = screen();
		const pinHandlers: Record<string, Function[]> = {};
		const saved = process.env.PI_SESSION_SOCKET;
		process.env.PI_SESSION_SOCKET = "/run/x.sock";
		try {
			registerPins({ on: (n: string, fn: Function) => void (pinHandlers[n] ??= []).push(fn), registerCommand: () => {}, appendEntry: () => {} } as any, {
				hello: () => ({ role: "main", subagent: false }),
				ready: async () => true,
				call: async () => ({ result: { handoff: "/h.md", pins: [], warning: h } }),
			} as any);
			for (const fn of pinHandlers.session_start ?? []) await fn({}, { ...p.ctx, sessionManager: { getBranch: () => [] } });
		} finally {
			if (saved === undefined) delete process.env.PI_SESSION_SOCKET;
			else process.env.PI_SESSION_SOCKET = saved;
		}
		assert.equal(p.out.length, 1, JSON.stringify(p.out));
		clean("pins notify", p.out[0].text);

		// recap: the config's provider and model in the error the user sees.
		const config: SummaryConfig = { enabled: true, provider: `p ${h}`, model: `m ${h}`, reasoning: "off" };
		await assert.rejects(
			summarizeRun({ find: () => undefined, complete: async () => ({ content: [], stopReason: "stop" }), verdict: async () => undefined }, { systemPrompt: "", userMessage: "" }, config, new AbortController().signal),
			(e: Error) => (clean("recap model error", e.message), true),
		);
	}
});

// SINKS are pi's ways to put text on a terminal; only sink.ts calls them,
// and every tool is registered through tool().
const SINKS = [
	/\bui\.(notify|setStatus|setWidget|setTitle|setWorkingMessage|setFooter|setHeader)\(/,
	/\bconsole\.(log|error|warn|info|debug)\(/,
	/\bprocess\.(stdout|stderr)\.write\(/,
	/\bregisterTool\((?!tool\()/,
];

test("no module but sink.ts writes to a sink directly", () => {
	const dir = new URL(".", import.meta.url);
	const files = readdirSync(dir).filter((f) => f.endsWith(".ts") && !f.endsWith(".test.ts") && f !== "sink.ts");
	assert.ok(files.length >= 10, files.join(" "));
	const found: string[] = [];
	for (const f of files) {
		readFileSync(new URL(f, dir), "utf8")
			.split("\n")
			.forEach((line, i) => {
				if (!line.trim().startsWith("//") && SINKS.some((re) => re.test(line))) found.push(`${f}:${i + 1}: ${line.trim()}`);
			});
	}
	assert.deepEqual(found, [], "write through sink.ts (notify, status, widget, log, tool) instead");
});
