// A scripted model for pi, registered as a provider with pi-ai's faux
// provider: the only stand-in pi-session's end-to-end tests and demo use.
//
// Environment:
//   FAUX_SCRIPT    JSON scenario file (optional):
//                    {"steps": [step, ...], "repeat": false, "fallback": "echo"}
//                  step: {"text": "..."}                       answer with text
//                        {"tool": "name", "args": {...}}       call one tool
//                        {"tools": [{"tool","args"}, ...]}     call tools in parallel
//                        {"error": "..."}                      fail with this provider error
//                                                              (e.g. "prompt is too long: ..." is
//                                                              a context overflow to pi)
//                  Any step may add "pad": N, a text block of about N
//                  tokens (4N characters) that grows the context and the
//                  reported usage by that much.
//                  A text step may add "filler": N, N characters of
//                  numbered lines that differ from one another after the
//                  text (a long session whose text is searchable).
//                  Text and tool arguments may use ${lastUser},
//                  ${lastToolResult}, ${lastHandle} (the last ce_ handle
//                  a tool result or user message mentioned) and
//                  ${lastEntryId} (the first "entryId <id>" of the last
//                  tool result, as recall lists them).
//                  The n-th request (counted across processes through
//                  FAUX_LOG, so a scenario spans relaunches) gets step n;
//                  after the last step, "repeat" starts over, otherwise the
//                  fallback answers: "echo" (faux: <last user text>) or
//                  "demo" (the demo's friendly answers).
//   FAUX_FALLBACK  fallback without a script (default echo)
//   FAUX_LOG       JSONL file; one line per request the model received:
//                  {"n", "pid", "messages", "tools"}: tools are the names
//                  of the tools the request declares to the model
//   FAUX_TIMES     file; one line per request: milliseconds (performance.now())
//                  when the model received it, for benchmarks that time turns
//                  without FAUX_LOG's cost
//   FAUX_PROVIDER, FAUX_MODEL, FAUX_MODEL_NAME, FAUX_CONTEXT_WINDOW
//                  the provider/model names (default faux/faux-1)
//   FAUX_RECAP     answers of a second, cheap model for recaps, registered
//                  only when this is set: a comma-separated list used in
//                  order, the last repeated (counted through
//                  FAUX_RECAP_LOG across processes):
//                    good     {"recap","next"} about the transcript it got
//                    hostile  the same in a fence, with chatter, terminal
//                             escapes and a "Next:" prefix
//                    fail     a provider error (503)
//                    garbage  text without JSON
//                    length   JSON cut by the token limit
//                    slow     waits until the request is aborted (or 60 s),
//                             then answers good
//   FAUX_RECAP_PROVIDER, FAUX_RECAP_MODEL
//                  its names (default faux-recap/recap-1; reasoning, and an
//                  output cost of $0.10 per million tokens)
//   FAUX_RECAP_LOG JSONL file; one line per request the recap model got:
//                  {"n", "pid", "model", "systemPrompt", "messages", "reasoning", "maxTokens"}
//   FAUX_PROMPT_CACHE  "short" or "short,long": the model declares promptCache
//                  with these lifetimes in seconds (unset: no declaration)
import { fauxAssistantMessage, fauxProvider, fauxText, fauxToolCall } from "@earendil-works/pi-ai";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import * as fs from "node:fs";

type Step = { text?: string; tool?: string; args?: Record<string, unknown>; tools?: { tool: string; args?: Record<string, unknown> }[]; error?: string; pad?: number; filler?: number };
type Scenario = { steps?: Step[]; repeat?: boolean; fallback?: string };

function loadScenario(): Scenario {
	const file = process.env.FAUX_SCRIPT;
	if (!file) return { steps: [], fallback: process.env.FAUX_FALLBACK ?? "echo" };
	const s = JSON.parse(fs.readFileSync(file, "utf8")) as Scenario;
	return { steps: s.steps ?? [], repeat: s.repeat ?? false, fallback: s.fallback ?? process.env.FAUX_FALLBACK ?? "echo" };
}

// filler is n characters of numbered lines that differ from one another,
// so a long session is cheap to script and its text is searchable.
export function filler(n: number, seed: number): string {
	const words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima"];
	const lines: string[] = [];
	let len = 0;
	for (let i = 0; len < n; i++) {
		const line = `filler ${seed}.${i}: ${words[(seed + i) % words.length]} ${words[(seed * 7 + i * 3) % words.length]} item_${seed}_${i} checked ok`;
		lines.push(line);
		len += line.length + 1;
	}
	return lines.join("\n").slice(0, n);
}

function textOf(content: unknown): string {
	if (typeof content === "string") return content;
	if (!Array.isArray(content)) return "";
	return content
		.filter((b: any) => b && b.type === "text")
		.map((b: any) => b.text)
		.join("\n");
}

function last(messages: any[], role: string): string {
	for (let i = messages.length - 1; i >= 0; i--) {
		if (messages[i].role === role) return textOf(messages[i].content);
	}
	return "";
}

// requestIndex is how many requests the model answered before this one,
// across every process sharing FAUX_LOG.
let localCount = 0;
function requestIndex(): number {
	const log = process.env.FAUX_LOG;
	if (!log) return localCount++;
	try {
		const data = fs.readFileSync(log, "utf8");
		return data.length === 0 ? 0 : data.split("\n").filter((l) => l.length > 0).length;
	} catch {
		return 0;
	}
}

// toolNames are the tools a request declares to the model: the request's
// own tool list, else what its system messages add and remove (pi 1.6
// declares tools in system messages: toolsAdded, toolsRemoved).
export function toolNames(tools: unknown, messages: any[]): string[] {
	if (Array.isArray(tools) && tools.length > 0) return tools.map((t: any) => String(t?.name));
	const names: string[] = [];
	for (const m of messages) {
		if (m?.role !== "system") continue;
		for (const t of m.tools ?? []) if (!names.includes(t.name)) names.push(t.name);
		for (const t of m.toolsAdded ?? []) if (!names.includes(t.name)) names.push(t.name);
		for (const t of m.toolsRemoved ?? []) {
			const i = names.indexOf(typeof t === "string" ? t : t?.name);
			if (i >= 0) names.splice(i, 1);
		}
	}
	return names;
}

function logRequest(n: number, messages: any[], tools: unknown) {
	const log = process.env.FAUX_LOG;
	if (!log) return;
	fs.appendFileSync(log, JSON.stringify({ n, pid: process.pid, messages, tools: toolNames(tools, messages) }) + "\n", { mode: 0o600 });
}

// The demo's build log comes from pi's own bash tool running the command
// demo/run.sh passes in FAUX_DEMO_LOG_COMMAND; run.sh measures its size
// (FAUX_DEMO_LOG_SIZE), so no figure is written here by hand.
const DEMO_LOG_COMMAND = process.env.FAUX_DEMO_LOG_COMMAND ?? "echo 'FAUX_DEMO_LOG_COMMAND is not set: run make demo'";
const DEMO_LOG_SIZE = process.env.FAUX_DEMO_LOG_SIZE ?? "large";

// demoStep is the demo's model: friendly answers, a handoff that continues
// in a fresh process, and a large build log that the offload engine keeps
// out of context and the model reads back with ctx_read.
function demoStep(messages: any[]) {
	const relay = relayDemoStep(messages);
	if (relay) return relay;
	const lastMsg = messages[messages.length - 1];
	if (lastMsg?.role === "toolResult") {
		const text = textOf(lastMsg.content);
		if (lastMsg.toolName === "context_handoff") return fauxAssistantMessage(`Done: ${text.split(" End your turn")[0]}`);
		const handle = /ce_[0-9a-f]{8,}/.exec(text)?.[0];
		if (lastMsg.toolName === "bash" && handle) {
			return fauxAssistantMessage([fauxToolCall("ctx_read", { id: handle, query: "ERROR" })], { stopReason: "toolUse" });
		}
		if (lastMsg.toolName === "ctx_read") {
			const found = text.split("\n").filter((l: string) => /^\d+:/.test(l)).slice(0, 6);
			return fauxAssistantMessage(
				[
					`The build log never entered my context: pi-session's offload engine stored it exactly and gave me the handle ${handle ?? "(see above)"} with an outline.`,
					"I read back only what matters with ctx_read (query \"ERROR\"):",
					...found.map((l: string) => "  " + l),
					"Try /ce status to see what that saved.",
				].join("\n"),
			);
		}
		return fauxAssistantMessage(`The tool returned ${text.length} characters inline (the offload engine keeps results under 16 KB as they are).`);
	}
	const user = last(messages, "user");
	if (user.startsWith("[/handoff]")) {
		const asked = messages.filter((m: any) => m.role === "user").map((m: any) => textOf(m.content)).filter((t: string) => !t.startsWith("[/handoff]"));
		const instructions = /The user's instructions for this handoff: (.*)/.exec(user)?.[1] ?? "";
		return fauxAssistantMessage(
			[
				fauxToolCall("context_handoff", {
					goal: asked.length ? `Continue the demo; the user asked: "${asked[asked.length - 1]}"` : "Continue the demo",
					next_step: instructions ? `Tell the user the session continued in a fresh process, then: ${instructions}` : "Tell the user the session continued in a fresh process.",
					facts: "The demo runs offline with a scripted model; nothing else was verified.",
					user_constraints: asked.join("\n"),
				}),
			],
			{ stopReason: "toolUse" },
		);
	}
	if (/\blog\b/i.test(user) && !/^continue from /.test(user.trim())) {
		return fauxAssistantMessage([fauxToolCall("bash", { command: DEMO_LOG_COMMAND })], { stopReason: "toolUse" });
	}
	return fauxAssistantMessage(demoAnswer(user));
}

// relayDemoStep is the relay scene: a long report that fills the context
// (its finding on the first line), and after /relay a question the model
// answers by fetching the finding back with recall. Undefined when the
// conversation is not in that scene.
function relayDemoStep(messages: any[]) {
	const lastMsg = messages[messages.length - 1];
	if (lastMsg?.role === "toolResult" && lastMsg.toolName === "recall") {
		const text = textOf(lastMsg.content);
		const found = /Finding: .*?\(\)\./.exec(text)?.[0];
		return fauxAssistantMessage(
			found
				? `The report left my context with the relay, but recall fetched it back from the session file:\n  ${found.trim()}\n(recall searched the entries that left the context; the handoff note told me how.)`
				: `recall answered:\n${text.slice(0, 600)}`,
		);
	}
	if (lastMsg?.role !== "user") return undefined;
	const user = textOf(lastMsg.content);
	if (/\bfill\b/i.test(user)) {
		return fauxAssistantMessage(
			"Here is the long profiling report.\nFinding: the ember_cache miss rate is 42% on shard 17, caused by an eviction bug in evictOldest().\n" + filler(90000, 1),
		);
	}
	if (/\b(find|found|finding)\b/i.test(user) && /report/i.test(user)) {
		return fauxAssistantMessage([fauxToolCall("recall", { query: "ember cache miss rate finding" })], { stopReason: "toolUse" });
	}
	return undefined;
}

function demoAnswer(user: string): string {
	const m = /^continue from (\S+)/.exec(user.trim());
	if (m) {
		let handoff = "";
		try {
			handoff = fs.readFileSync(m[1], "utf8");
		} catch (e) {
			return `I could not read the handoff ${m[1]}: ${(e as Error).message}`;
		}
		const goal = /## Goal\n+([^\n]+)/.exec(handoff)?.[1] ?? "(no goal recorded)";
		const next = /## Next step\n+([^\n]+)/.exec(handoff)?.[1] ?? "(no next step recorded)";
		return [
			`Continuing from the handoff ${m[1]}.`,
			`This is a fresh pi process (pid ${process.pid}); pi-session started it because the last one exited after a verified handoff.`,
			`Goal: ${goal}`,
			`Next step: ${next}`,
		].join("\n\n");
	}
	return [
		`(scripted demo model, offline) You said: "${user.trim()}".`,
		"pi is running under pi-session: a PTY it owns, your keys and window size passed through.",
		`Type "show me the build log" to see a ${DEMO_LOG_SIZE} tool result kept out of context and read back by handle.`,
		"Type /handoff to write a handoff and watch pi-session relaunch pi into a fresh process that continues from it; /quit leaves.",
	].join("\n\n");
}

// promptCache is the model's declared cache lifetime, from FAUX_PROMPT_CACHE.
function promptCache(): { promptCache?: { short?: number; long?: number } } {
	const v = process.env.FAUX_PROMPT_CACHE;
	if (!v) return {};
	const [short, long] = v.split(",").map((x) => Number(x.trim()));
	return { promptCache: { short, ...(Number.isFinite(long) ? { long } : {}) } };
}

export default function (pi: ExtensionAPI) {
	const scenario = loadScenario();
	const provider = process.env.FAUX_PROVIDER ?? "faux";
	const modelId = process.env.FAUX_MODEL ?? "faux-1";
	const faux = fauxProvider({
		provider,
		api: provider,
		models: [
			{
				id: modelId,
				name: process.env.FAUX_MODEL_NAME ?? "Faux Model",
				contextWindow: Number(process.env.FAUX_CONTEXT_WINDOW ?? 128000),
			},
		],
	});
	// The faux provider copies only the fields it knows from a definition.
	for (const m of faux.models) Object.assign(m, promptCache());
	const respond = (context: any) => {
		faux.appendResponses([respond]); // keep exactly one response queued
		const messages = context.messages ?? [];
		if (process.env.FAUX_TIMES) fs.appendFileSync(process.env.FAUX_TIMES, performance.now().toFixed(3) + "\n");
		const n = requestIndex();
		logRequest(n, messages, context.tools);
		const steps = scenario.steps ?? [];
		let step: Step | undefined;
		if (n < steps.length) step = steps[n];
		else if (scenario.repeat && steps.length > 0) step = steps[n % steps.length];
		const handle = () => {
			for (let i = messages.length - 1; i >= 0; i--) {
				const m = /ce_[0-9a-f]{8,}/.exec(textOf(messages[i].content));
				if (m) return m[0];
			}
			return "";
		};
		const subst = (s: string) =>
			s
				.replaceAll("${lastUser}", last(messages, "user"))
				.replaceAll("${lastToolResult}", last(messages, "toolResult"))
				.replaceAll("${lastHandle}", s.includes("${lastHandle}") ? handle() : "")
				.replaceAll("${lastEntryId}", /entryId ([0-9a-f]{8})/.exec(last(messages, "toolResult"))?.[1] ?? "");
		const substArgs = (v: unknown): unknown =>
			typeof v === "string" ? subst(v) : Array.isArray(v) ? v.map(substArgs) : v && typeof v === "object" ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, substArgs(x)])) : v;
		const pad = step?.pad ? [fauxText("padding ".repeat(Math.ceil(step.pad / 2)))] : [];
		if (step?.error !== undefined) return fauxAssistantMessage([], { stopReason: "error", errorMessage: step.error });
		if (step?.tools || step?.tool) {
			const calls = step.tools ?? [{ tool: step.tool!, args: step.args }];
			return fauxAssistantMessage(
				[...pad, ...calls.map((c) => fauxToolCall(c.tool, substArgs(c.args ?? {}) as Record<string, unknown>))],
				{ stopReason: "toolUse" },
			);
		}
		if (step?.text !== undefined) return fauxAssistantMessage([...pad, fauxText(subst(step.text) + (step.filler ? "\n" + filler(step.filler, n) : ""))]);
		if (scenario.fallback === "demo") return demoStep(messages);
		return fauxAssistantMessage("faux: " + last(messages, "user"));
	};
	faux.setResponses([respond]);
	pi.registerProvider(faux.provider);
	if (process.env.FAUX_RECAP) registerRecapModel(pi);
}

// registerRecapModel registers the scripted recap model (FAUX_RECAP).
function registerRecapModel(pi: ExtensionAPI) {
	const answers = (process.env.FAUX_RECAP ?? "good").split(",").map((a) => a.trim()).filter(Boolean);
	const provider = process.env.FAUX_RECAP_PROVIDER ?? "faux-recap";
	const modelId = process.env.FAUX_RECAP_MODEL ?? "recap-1";
	const faux = fauxProvider({
		provider,
		api: provider,
		models: [{ id: modelId, name: "Scripted recap model", reasoning: true, cost: { input: 0.05, output: 0.1, cacheRead: 0, cacheWrite: 0 } }],
	});
	let local = 0;
	const respond = async (context: any, options: any) => {
		faux.appendResponses([respond]);
		const log = process.env.FAUX_RECAP_LOG;
		let n = local++;
		if (log) {
			try {
				n = fs.readFileSync(log, "utf8").split("\n").filter((l) => l.length > 0).length;
			} catch {
				n = 0;
			}
			const line = { n, pid: process.pid, model: `${provider}/${modelId}`, systemPrompt: context.systemPrompt, messages: context.messages, reasoning: options?.reasoning ?? null, maxTokens: options?.maxTokens ?? null };
			fs.appendFileSync(log, JSON.stringify(line) + "\n", { mode: 0o600 });
		}
		const kind = answers[Math.min(n, answers.length - 1)];
		const transcript = last(context.messages ?? [], "user");
		switch (kind) {
			case "fail":
				return fauxAssistantMessage("", { stopReason: "error", errorMessage: "scripted recap failure: 503 Service Unavailable" });
			case "garbage":
				return fauxAssistantMessage("I would rather not write JSON today.");
			case "length":
				return fauxAssistantMessage('{"recap": "Ran the', { stopReason: "length" });
			case "hostile":
				return fauxAssistantMessage(
					"Sure! Here is the recap you asked for:\n```json\n" +
						JSON.stringify({ recap: "\u001b[31mRan the scripted tools\u001b[0m and \u001b]8;;https://example.com\u0007checked\u001b]8;;\u0007 the output.", next: "Next: run make test" }) +
						"\n```\nHope this helps!",
				);
			case "slow":
				await new Promise<void>((resolve) => {
					const t = setTimeout(resolve, 60_000);
					options?.signal?.addEventListener("abort", () => {
						clearTimeout(t);
						resolve();
					});
				});
				return fauxAssistantMessage(JSON.stringify(goodRecap(transcript)));
			default:
				return fauxAssistantMessage(JSON.stringify(goodRecap(transcript)));
		}
	};
	faux.setResponses([respond]);
	pi.registerProvider(faux.provider);
}

// goodRecap is the scripted recap of a transcript, as the recap prompt
// asks: the last run (after the last "--- run n of N ---" line, or the
// whole transcript) with the request that started it (its first USER line)
// and the tools it called; earlier runs by their requests.
function goodRecap(transcript: string): { recap: string; next: string } {
	const runs = transcript.split(/^--- run \d+ of \d+ ---$/m).filter((r) => /^(USER|ASSISTANT|TOOL|EXTENSION)/m.test(r));
	const quote = (s: string) => (s.length > 60 ? s.slice(0, 57) + "..." : s);
	const ask = (run: string) => /^USER: (.*)$/m.exec(run)?.[1]?.trim() ?? "the request";
	const lastRun = runs[runs.length - 1] ?? transcript;
	const tools = [...lastRun.matchAll(/^TOOL CALL ([^:]+):/gm)].map((m) => m[1]);
	const unique = [...new Set(tools)];
	const quoted = quote(ask(lastRun));
	const did = tools.length > 0 ? `Ran ${tools.length} tool call${tools.length === 1 ? "" : "s"} (${unique.join(", ")}) for "${quoted}"` : `Answered "${quoted}"`;
	const earlier = runs.slice(0, -1).map((r) => `"${quote(ask(r))}"`);
	const before = earlier.length > 0 ? ` (earlier: ${earlier.join(", ")})` : "";
	return { recap: `${did}${before}; the run finished without errors.`, next: "Review the answer and continue with the next task." };
}
