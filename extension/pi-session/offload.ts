// The offload engine's side in pi: the ctx_read, ctx_summarize and
// ctx_offload tools and the /ce command. Each forwards to the engine
// (offload.* on the engine host) and shows its answer; the decisions, the
// store and the text all live in Go. When the engine is unreachable the
// tools say so as a tool error: no new handles are made while it is down,
// so only handles from before the outage are affected.
import type { ExtensionAPI, ExtensionCommandContext } from "@earendil-works/pi-coding-agent";
import { StringEnum } from "@earendil-works/pi-ai";
import { Type } from "typebox";
import { Code, EngineError } from "./client.ts";

import { Deadline, type Call, type Kit } from "./kit.ts";
import { notify, tool } from "./sink.ts";

type ToolAnswer = { text: string; details?: unknown };

// nested remembers the tool calls made inside a program (a parentToolCallId,
// as Pi Fabric's fabric_exec sets): their ctx_read results are program data.
const nested = new Set<string>();

export function registerOffload(pi: ExtensionAPI, kit: Kit) {
	const call = kit.call;
	// notifyOnStart, and the configuration's warnings: said once when a
	// session starts, without holding the start up.
	pi.on("session_start", () => {
		void startNotice(kit);
	});
	pi.on("tool_call", (event) => {
		if (event.parentToolCallId) nested.add(event.toolCallId);
		return undefined;
	});
	pi.on("tool_execution_end", (event) => {
		nested.delete(event.toolCallId);
	});

	const run = async (method: string, toolCallId: string, args: unknown, signal?: AbortSignal) => {
		try {
			const a = await call<ToolAnswer>(`offload.${method}`, { inProgram: nested.has(toolCallId), args }, { signal, timeoutMs: Deadline.work });
			return { content: [{ type: "text" as const, text: a.result.text }], details: a.result.details ?? {} };
		} catch (e) {
			throw new Error(explain(e as EngineError));
		}
	};

	pi.registerTool(tool({
		name: "ctx_read",
		label: "Read stored output",
		description:
			"Read part of a large tool result that was stored behind a ce_ handle. Modes: byte range (offset, length; continue at nextOffset); line query (query: a string or an array of strings matching any; regex, ignoreCase, contextLines, maxMatches; continue with cursor); section (a named part of headed output); jsonPath (RFC 9535, e.g. $.items[0].name). Copy a call from the notice when unsure.",
		promptSnippet: "ctx_read: read a stored ce_ handle by byte range, line query, section or jsonPath instead of re-running a tool",
		parameters: Type.Object({
			id: Type.String({ description: "The ce_ handle from the notice" }),
			offset: Type.Optional(Type.Integer({ description: "Byte offset to start at (range mode, or within a section)" })),
			length: Type.Optional(Type.Integer({ description: "Bytes to read (range mode)" })),
			query: Type.Optional(Type.Union([Type.String(), Type.Array(Type.String())], { description: "Find lines containing this text, or any of these texts" })),
			regex: Type.Optional(Type.Boolean({ description: "Treat query as a Go RE2 regular expression" })),
			ignoreCase: Type.Optional(Type.Boolean({ description: "Match regardless of case" })),
			contextLines: Type.Optional(Type.Integer({ description: "Lines of context around each match (default 2)" })),
			maxMatches: Type.Optional(Type.Integer({ description: "Matching lines per page (default 20)" })),
			cursor: Type.Optional(Type.String({ description: "nextCursor of the previous page of the same query" })),
			section: Type.Optional(Type.String({ description: "Name of a section, file or heading from the notice's outline" })),
			jsonPath: Type.Optional(Type.String({ description: "JSONPath of one value in a JSON payload, e.g. $.results[0].name" })),
		}),
		async execute(toolCallId, params, signal) {
			return run("read", toolCallId, params, signal);
		},
	}));

	pi.registerTool(tool({
		name: "ctx_summarize",
		label: "Summarize stored output",
		description:
			"Deterministic summary of a stored ce_ handle (id) or of inline text: mode structural (default; JSON shape, or head and tail lines) or code (imports and signatures); maxTokens 64-4000 bounds the result.",
		parameters: Type.Object({
			id: Type.Optional(Type.String({ description: "A ce_ handle" })),
			text: Type.Optional(Type.String({ description: "Inline text to summarize instead of a handle" })),
			mode: Type.Optional(StringEnum(["structural", "code"] as const)),
			maxTokens: Type.Optional(Type.Integer({ description: "Upper bound of the summary, 64-4000 tokens" })),
		}),
		async execute(toolCallId, params, signal) {
			return run("summarize", toolCallId, params, signal);
		},
	}));

	pi.registerTool(tool({
		name: "ctx_offload",
		label: "Store output",
		description: "Store a payload on purpose and get a ce_ handle back, to read later with ctx_read: {key, source, data}.",
		parameters: Type.Object({
			key: Type.Optional(Type.String({ description: "A name for the payload" })),
			source: Type.Optional(Type.String({ description: "Where the data came from (a tool name, a file)" })),
			data: Type.Unknown({ description: "The payload: text, or any JSON value (stored as its JSON text)" }),
		}),
		async execute(toolCallId, params, signal) {
			return run("offload", toolCallId, params, signal);
		},
	}));

	pi.registerCommand("ce", {
		description: "Context engineer: /ce status [--all] | trace [--all] [n] | settings | clear [--store]",
		getArgumentCompletions: (prefix: string) =>
			["status", "status --all", "trace", "settings", "clear", "clear --store"]
				.filter((s) => s.startsWith(prefix))
				.map((s) => ({ value: s, label: s })),
		handler: async (args, ctx) => {
			show(ctx, await ce(call, args));
		},
	});
}

// startNotice shows the engine's word at session start: the notice
// notifyOnStart asks for (only with a UI: print and json runs stay quiet)
// and the warnings of .pi/context-engineer.json.
export async function startNotice(kit: Kit): Promise<void> {
	if (!(await kit.ready(5000))) return;
	const a = await kit.ask<{ notice?: string; warning?: string }>("offload.start", undefined, { timeoutMs: Deadline.start });
	if (!a) return;
	if (a.result.notice && !kit.hello()?.headless) kit.say(a.result.notice, "info");
	if (a.result.warning) kit.say(a.result.warning, "warning");
}

// ce runs one /ce subcommand and returns the text to show.
export async function ce(call: Call, args: string): Promise<string> {
	const words = args.trim().split(/\s+/).filter(Boolean);
	const sub = words[0] ?? "status";
	const all = words.includes("--all");
	const o = { timeoutMs: Deadline.command };
	try {
		switch (sub) {
			case "status":
				return (await call<ToolAnswer>("offload.status", { all }, o)).result.text;
			case "trace": {
				const n = Number(words.find((w) => /^\d+$/.test(w)) ?? 20);
				return (await call<ToolAnswer>("offload.trace", { all, limit: n }, o)).result.text;
			}
			case "settings":
				return (await call<ToolAnswer>("offload.settings", {}, o)).result.text;
			case "clear":
				return (await call<ToolAnswer>("offload.clear", { store: words.includes("--store") }, o)).result.text;
			default:
				return `/ce ${sub}: unknown; use /ce status [--all], /ce trace [--all] [n], /ce settings, /ce clear [--store]`;
		}
	} catch (e) {
		return `/ce ${sub}: ${explain(e as EngineError)}`;
	}
}

function explain(err: EngineError): string {
	if (err.code === Code.Unavailable) return `pi-session's engine is unreachable (${err.message}); stored handles cannot be read until it is back`;
	if (err.code === Code.MethodNotFound) return "this pi-session has no offload engine";
	return err.message.replace(/^offload: /, "");
}

// show is /ce's answer: a notification, or stdout in print mode.
function show(ctx: ExtensionCommandContext, text: string) {
	notify(ctx, text, "info", "stdout");
}
