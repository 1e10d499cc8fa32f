// A scripted model for recording pi session fixtures.
//
// The scenario (FAUX_SCENARIO, JSON) lists the model's responses in order and
// the boundary drafts to return from turn_end. Every request the model
// receives is appended to FAUX_LOG as one JSON line: the messages after pi's
// hooks, plus the session leaf at request time, so a test can compare its own
// projection of the session file with what pi sent.
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { fauxAssistantMessage, fauxProvider, fauxText, fauxThinking, fauxToolCall } from "@earendil-works/pi-ai";
import { appendFileSync, readFileSync } from "node:fs";

type Block =
	| { text: string }
	| { thinking: string }
	| { tool: string; args: Record<string, unknown> };

interface Response {
	content: Block[];
}

type Target = string; // "assistant", "toolResult:N", "user", "user~N", "assistant~N", "custom_message"

type DraftSpec =
	| { type: "context_edit"; target: Target; replacement: null | { content: unknown } }
	| { type: "compaction"; summary: string; firstKept: Target | null; details?: unknown }
	| { type: "custom_message"; customType: string; content: unknown; display: boolean; details?: unknown }
	| { type: "custom"; customType: string; data?: unknown };

interface Scenario {
	responses: Response[];
	// turn_end drafts by turn number (1-based, counted over the whole process).
	turnEnd?: Record<string, { drafts: DraftSpec[]; continue?: boolean }>;
	// Summary returned from session_before_tree when /rec-tree summarizes.
	branchSummary?: { summary: string; details?: unknown };
}

export default function (pi: ExtensionAPI) {
	const scenario: Scenario = JSON.parse(readFileSync(process.env.FAUX_SCENARIO!, "utf8"));
	const log = process.env.FAUX_LOG!;
	let ctx: ExtensionContext | undefined;
	let request = 0;

	const faux = fauxProvider({
		provider: "faux",
		api: "faux",
		models: [
			{ id: "faux-1", contextWindow: 128000, maxTokens: 16384 },
			{ id: "faux-2", reasoning: true, contextWindow: 200000, maxTokens: 32000 },
		],
	});
	faux.setResponses(
		scenario.responses.map((response) => (context, options) => {
			const sm = ctx?.sessionManager;
			appendFileSync(
				log,
				`${JSON.stringify({
					request: request++,
					session: options?.sessionId === sm?.getSessionId(),
					leafId: sm?.getLeafId() ?? null,
					messages: context.messages,
				})}\n`,
			);
			const content = response.content.map((block) => {
				if ("text" in block) return fauxText(block.text);
				if ("thinking" in block) return fauxThinking(block.thinking);
				return fauxToolCall(block.tool, block.args);
			});
			const toolUse = content.some((block) => block.type === "toolCall");
			return fauxAssistantMessage(content, { stopReason: toolUse ? "toolUse" : "stop" });
		}),
	);
	pi.registerProvider(faux.provider);

	pi.on("session_start", (_event, c) => {
		ctx = c;
	});

	// Resolve a symbolic target against the active branch.
	function resolve(c: ExtensionContext, target: Target, turn?: { messageEntryId: string; toolResultEntryIds: string[] }): string {
		if (turn && target === "assistant") return turn.messageEntryId;
		if (turn && target.startsWith("toolResult:")) return turn.toolResultEntryIds[Number(target.slice(11))];
		const [kind, back] = target.split("~");
		const skip = Number(back ?? 0);
		const branch = c.sessionManager.getBranch();
		let seen = 0;
		for (let i = branch.length - 1; i >= 0; i--) {
			const entry = branch[i];
			const role = entry.type === "message" ? entry.message.role : entry.type;
			if (role === kind && seen++ === skip) return entry.id;
		}
		throw new Error(`faux: no ${target} on the branch`);
	}

	let turns = 0;
	pi.on("turn_end", (event, c) => {
		turns++;
		const spec = scenario.turnEnd?.[String(turns)];
		if (!spec) return undefined;
		const drafts = spec.drafts.map((d) => {
			switch (d.type) {
				case "context_edit":
					return { type: d.type, targetId: resolve(c, d.target, event), replacement: d.replacement };
				case "compaction":
					return {
						type: d.type,
						summary: d.summary,
						firstKeptEntryId: d.firstKept === null ? null : resolve(c, d.firstKept, event),
						details: d.details,
					};
				default:
					return d;
			}
		});
		return { entries: [...event.entries, ...drafts], continue: spec.continue };
	});

	pi.on("session_before_tree", () => {
		if (!scenario.branchSummary) return undefined;
		return { summary: scenario.branchSummary };
	});

	// /rec-tree <target> [summarize]: move the leaf like /tree does.
	pi.registerCommand("rec-tree", {
		description: "navigate the session tree (recording helper)",
		handler: async (args, c) => {
			const [target, mode] = args.trim().split(/\s+/);
			const result = await c.navigateTree(resolve(c, target), { summarize: mode === "summarize" });
			c.ui.notify(`rec-tree ${result.cancelled ? "cancelled" : "done"}`, "info");
		},
	});

	// /rec-label <target> <label>: label an entry.
	pi.registerCommand("rec-label", {
		description: "label an entry (recording helper)",
		handler: async (args, c) => {
			const [target, ...label] = args.trim().split(/\s+/);
			pi.setLabel(resolve(c, target), label.join(" "));
			c.ui.notify("rec-label done", "info");
		},
	});

	// /rec-message <text>: a custom message that enters the context.
	pi.registerCommand("rec-message", {
		description: "send a custom message (recording helper)",
		handler: async (args, c) => {
			pi.sendMessage({ customType: "rec-note", content: args, display: true, details: { from: "rec-message" } });
			c.ui.notify("rec-message done", "info");
		},
	});
}
